"""The one place events are emitted: the protocol envelope, sent to a group after commit."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Iterable
from typing import Any

from channels.layers import get_channel_layer

from config.db.per_process import PerProcess
from config.db.pool import after_commit

logger = logging.getLogger(__name__)

# Every event type the server emits; docs/protocol.md documents each, tests check both agree.
EVENT_TYPES = frozenset(
    {
        "session.snapshot",
        "session.history",
        "message.created",
        "message.started",
        "message.delta",
        "message.completed",
        "tool.called",
        "tool.result",
        "tool.progress",
        "run.progress",
        "delegation.started",
        "delegation.completed",
        "run.completed",
        "routing.decided",
        "reminder.due",
        "watch.notification",
        "run.waiting",
        "run.resumed",
        "message.assessed",
        "inbox.new_item",
        "inbox.item_decided",
        "error",
    }
)


def session_group(session_id: uuid.UUID | str) -> str:
    """The channel-layer group of one chat session."""
    return f"chat.session.{session_id}"


def user_group(user_id: int | str) -> str:
    """The channel-layer group of every open socket of one user (reminders, notices)."""
    return f"chat.user.{user_id}"


INBOX_STAFF = "inbox.staff"  # staff sockets: inbox items assigned to no group
INBOX_ALL = "inbox.all"  # superuser sockets: every inbox item


def inbox_group(group_id: int | None) -> str:
    """The channel-layer group of the inbox items assigned to one auth group (None: none)."""
    return INBOX_STAFF if group_id is None else f"inbox.group.{group_id}"


def envelope(
    type: str,
    *,
    session_id: uuid.UUID | str | None,
    run_id: uuid.UUID | str | None = None,
    message_id: uuid.UUID | str | None = None,
    agent: dict[str, Any] | None = None,
    seq: int | None = None,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build one event in the protocol's envelope shape."""
    if type not in EVENT_TYPES:
        raise ValueError(f"undocumented event type {type!r}")
    return {
        "type": type,
        "session_id": str(session_id) if session_id else None,
        "run_id": str(run_id) if run_id else None,
        "message_id": str(message_id) if message_id else None,
        "agent": agent,
        "seq": seq,
        "data": data or {},
    }


def emit(event: dict[str, Any]) -> None:
    """Send the event to its session's group once the current transaction commits."""
    after_commit(lambda: _sender().submit(session_group(event["session_id"]), event))


def emit_to_user(user_id: int | str, event: dict[str, Any]) -> None:
    """Send the event to every open socket of the user once the current transaction commits."""
    after_commit(lambda: _sender().submit(user_group(user_id), event))


def emit_to_users(events: Iterable[tuple[int | str, dict[str, Any]]]) -> None:
    """Send each (user id, event) to every open socket of that user once the current
    transaction commits, in order: one commit hook for them all (a batch of thousands)."""
    pending = [(user_group(user_id), event) for user_id, event in events]

    def send() -> None:
        sender = _sender()
        for group, event in pending:
            sender.submit(group, event)

    after_commit(send)


def emit_to_group(group: str, event: dict[str, Any]) -> None:
    """Send the event to a channel-layer group (e.g. an inbox group) after commit."""
    after_commit(lambda: _sender().submit(group, event))


SEND_GROUPS = 32  # groups the sender sends to at once (each group's events stay in order)


class _Sender:
    """One event loop per process that sends each group's events in the order they were emitted.

    Calling async_to_sync per event would start a new loop each time, and channels_redis keeps
    its connection pool per loop, so every event would open a new Redis connection. Workers
    hand events to this loop and go on; the database is the truth, so a failed send is logged.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.queue: asyncio.Queue[tuple[str, dict[str, Any]] | threading.Event] | None = None
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True, name="events").start()
        ready.wait(5)

    def submit(self, group: str, event: dict[str, Any]) -> None:
        """Queue one event for its group (thread-safe, returns at once). The embedded in-memory
        layer takes it straight onto the server's loop: no hop through this sender's loop."""
        layer = get_channel_layer()
        direct = getattr(layer, "group_send_threadsafe", None)
        if direct is not None:
            direct(group, {"type": event["type"], "event": event})
            return
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (group, event))

    def flush(self, timeout: float) -> None:
        """Wait until every event queued so far was handed to the channel layer."""
        flush_direct = getattr(get_channel_layer(), "flush_threadsafe", None)
        if flush_direct is not None:
            flush_direct(timeout)
        done = threading.Event()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, done)
        done.wait(timeout)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.queue = asyncio.Queue()
        ready.set()
        self.loop.run_until_complete(self._drain())

    async def _drain(self) -> None:
        """Send what is queued. What queued up while the last sends ran goes as one batch, its
        deltas joined (`coalesced`: a sender behind sends fewer events, not later), each group's
        events in order, up to SEND_GROUPS groups at once (a send is four Redis round trips,
        each a wait for the interpreter in a process of busy threads: they overlap)."""
        slots, queue = asyncio.Semaphore(SEND_GROUPS), self.queue
        assert queue is not None  # made by _run before it starts this
        while True:
            items = [await queue.get()]
            while not queue.empty():
                items.append(queue.get_nowait())
            by_group: dict[str, list[dict[str, Any]]] = {}
            events = [item for item in items if not isinstance(item, threading.Event)]
            for group, event in coalesced(events):
                by_group.setdefault(group, []).append(event)
            await asyncio.gather(*(_send(group, sent, slots) for group, sent in by_group.items()))
            for item in items:
                if isinstance(item, threading.Event):
                    item.set()


async def _send(group: str, events: list[dict[str, Any]], slots: asyncio.Semaphore) -> None:
    """Send one group's events in order, holding one of the sender's slots."""
    async with slots:
        for event in events:
            try:
                await get_channel_layer().group_send(group, {"type": event["type"], "event": event})
            except Exception:
                logger.warning("could not send %s to %s", event["type"], group, exc_info=True)


def coalesced(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The (group, event) pairs in order, each `message.delta` that continues the previous
    event of its group (a delta of the same message, its text right after) joined to it: one
    delta with both texts, at the first one's offset, numbered as the last (seq may jump).
    Under hundreds of streams one process's sender falls behind; this bounds its backlog of
    deltas to one per message (docs/scaling.md)."""
    out: list[tuple[str, dict[str, Any]]] = []
    latest: dict[str, int] = {}  # group -> index in `out` of its latest event
    for group, event in events:
        index = latest.get(group)
        if index is not None and _continues(out[index][1], event):
            before = out[index][1]
            text = before["data"]["text"] + event["data"]["text"]
            out[index] = (group, {**event, "data": {**before["data"], "text": text}})
            continue
        latest[group] = len(out)
        out.append((group, event))
    return out


def _continues(before: dict[str, Any], event: dict[str, Any]) -> bool:
    """Whether `event` is a delta whose text follows `before`'s, a delta of the same message."""
    if before["type"] != "message.delta" or event["type"] != "message.delta":
        return False
    if before["message_id"] != event["message_id"] or before["run_id"] != event["run_id"]:
        return False
    return before["data"]["offset"] + len(before["data"]["text"]) == event["data"]["offset"]


_SENDER = PerProcess(_Sender)


def _sender() -> _Sender:
    """This process's sender (a forked worker child starts its own)."""
    return _SENDER.get()


def flush_events(timeout: float = 5.0) -> None:
    """Block until the events emitted so far were handed to the channel layer."""
    sender = _SENDER.current()
    if sender is not None:
        sender.flush(timeout)
