"""Drives turns at a worker as users do: each turn's chat session is joined on the channel layer
first (as the page's websocket joins it), the turn is started through the turn service, and it
counts as done when the entry agent's `run.completed` reaches the listener. Needs Django set up
in this process, in distributed mode (Postgres, Redis)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

STAMPED = re.compile(r"@(\d+\.\d+) ")  # the fake model's pieces (bench/fake_stream.py)


@dataclass
class Turn:
    """One turn: its session, when it was started and ended (time.time()), how it ended."""

    session_id: uuid.UUID
    started: float = 0.0
    run_id: uuid.UUID | None = None
    status: str = ""
    finished: float | None = None  # the root run's finished_at, as the database has it
    seen: float | None = None  # its run.completed reached the listener

    @property
    def took(self) -> float | None:
        """Send to the user's run.completed, in seconds (None if it never came)."""
        return None if self.seen is None else self.seen - self.started


class Listener:
    """A channel-layer client on a loop of its own: one channel per session, joined to the
    session's group, noting when the entry agent's run.completed arrives and how late each
    delta's text is (the fake model stamps its pieces with when it sent them)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.seen: dict[str, float] = {}
        self.events = 0
        self.piece_lags: list[float] = []  # each delta: now - when its oldest piece was sent
        threading.Thread(target=self.loop.run_forever, daemon=True, name="bench-listener").start()

    def join(self, session_ids: list[uuid.UUID]) -> None:
        """Join each session's group (and listen on it) before its turn starts."""
        asyncio.run_coroutine_threadsafe(self._join(session_ids), self.loop).result(120)

    async def _join(self, session_ids: list[uuid.UUID]) -> None:
        from channels.layers import get_channel_layer

        from chat.events import session_group

        layer = get_channel_layer()
        for session_id in session_ids:
            channel = await layer.new_channel()
            await layer.group_add(session_group(session_id), channel)
            self.loop.create_task(self._listen(layer, channel, str(session_id)))

    async def _listen(self, layer: object, channel: str, session_id: str) -> None:
        while True:
            message = await layer.receive(channel)  # type: ignore[attr-defined]
            event = message["event"]
            self.events += 1
            if event["type"] == "message.delta":
                stamp = STAMPED.search(event["data"]["text"])
                if stamp:
                    self.piece_lags.append(time.time() - float(stamp.group(1)))
            if event["type"] == "run.completed" and (event.get("agent") or {}).get("depth") == 0:
                self.seen[session_id] = time.time()
                return


def _start(turns: list[Turn]) -> None:
    """Start the turns through the turn service, from 8 threads."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from delegation.turns import turn_start

    user = get_user_model().objects.get(username="bench")

    def one(turn: Turn) -> None:
        turn.started = time.time()
        sent = turn_start(user=user, session_id=turn.session_id, message_id=uuid.uuid4(), text="go")
        connection.close()  # back to this process's pool
        assert sent.run is not None
        turn.run_id = sent.run.id

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, turns))


def _ended(turns: list[Turn], timeout: float) -> None:
    """Wait (at most `timeout` s) until every root run is final, noting how and when."""
    from delegation.models import FINAL_STATUSES, Run

    by_run = {turn.run_id: turn for turn in turns}
    deadline = time.monotonic() + timeout
    while by_run and time.monotonic() < deadline:
        ended = Run.objects.filter(id__in=list(by_run), status__in=FINAL_STATUSES)
        for run_id, status, finished in ended.values_list("id", "status", "finished_at"):
            turn = by_run.pop(run_id)
            turn.status, turn.finished = status, finished.timestamp()
        time.sleep(0.1)


def drive(count: int, listener: Listener, timeout: float) -> list[Turn]:
    """Start `count` turns at once, each in a new session, and wait (at most `timeout` s) for
    them to end and for their ends to reach the listener."""
    turns = [Turn(uuid.uuid4()) for _ in range(count)]
    listener.join([turn.session_id for turn in turns])
    _start(turns)
    deadline = time.monotonic() + timeout
    _ended(turns, timeout)
    while time.monotonic() < deadline and any(
        str(turn.session_id) not in listener.seen for turn in turns if turn.finished
    ):
        time.sleep(0.05)
    for turn in turns:
        turn.seen = listener.seen.get(str(turn.session_id))
    return turns


PHASES = ("queued", "lead asks", "expert answers", "lead answers", "event lag")


def phases(turns: list[Turn]) -> dict[str, list[float]]:
    """Where each turn's time went, in seconds: waiting for a worker (start to the root's
    claim), the lead's first step (to its expert's creation: two seconds of model and the
    steps' database work), the expert's run, the lead's answer, and its end's way to the user."""
    from delegation.models import Run

    ended = [turn for turn in turns if turn.seen and turn.run_id]
    roots = Run.objects.filter(id__in=[turn.run_id for turn in ended])
    root_at = {r[0]: r[1:] for r in roots.values_list("id", "started_at", "finished_at")}
    children = Run.objects.filter(parent_id__in=list(root_at))
    child_at = {c[0]: c[1:] for c in children.values_list("parent_id", "created_at", "finished_at")}
    out: dict[str, list[float]] = {name: [] for name in PHASES}
    for turn in ended:
        claimed, finished = (moment.timestamp() for moment in root_at[turn.run_id])
        asked, answered = (moment.timestamp() for moment in child_at[turn.run_id])
        marks = [turn.started, claimed, asked, answered, finished, turn.seen]
        for name, begin, end in zip(PHASES, marks, marks[1:], strict=False):
            out[name].append(end - begin)
    return out
