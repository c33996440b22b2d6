"""Server-Sent Events: the websocket's event stream for API clients, per session or per run."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from rest_framework import exceptions

from chat.events import envelope, session_group
from chat.metrics import CONNECTIONS
from chat.relay import LAYER_ERRORS, PROBE_TYPE, RelayProbe
from chat.selectors import access_session
from chat.tokens import ApiTokenAuthentication
from config.errors import AppError
from delegation.selectors import access_run, run_tree
from delegation.turns import session_snapshot_turns

logger = logging.getLogger(__name__)

ERROR_INTERRUPTED = "stream_interrupted"
# DRF's sentence for a request without credentials (the catalogues translate it for REST too).
NOT_AUTHENTICATED = gettext_noop("Authentication credentials were not provided.")
T = TypeVar("T")


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


async def _user(request: HttpRequest) -> Any:
    """The token's user, else the session's; None if neither (AuthenticationFailed if bad)."""
    found = await database_sync_to_async(ApiTokenAuthentication().authenticate)(request)
    if found:
        return found[0]
    user = await request.auser()
    return user if user.is_authenticated else None


def _sse(event: dict[str, Any], counter: int) -> str:
    data = json.dumps(event, ensure_ascii=False)
    return f"id: {counter}\nevent: {event['type']}\ndata: {data}\n\n"


class Subscription:
    """A fresh channel in a session's group; joined before the snapshot is read, so no event
    emitted meanwhile is lost (it waits in the channel). Its probe (chat/relay.py) tells when
    the layer forgot the group."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.layer = get_channel_layer()
        self.channel = ""
        self.probe: RelayProbe | None = None

    async def join(self) -> None:
        """Create the channel and add it to the group and to its probe's."""
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(self.group, self.channel)
        self.probe = RelayProbe(self.layer, self.channel)
        CONNECTIONS.labels(door="sse").inc()
        await self.probe.join()

    async def leave(self) -> None:
        """Leave the groups, once (a door may call it on failure and again on close); a
        failing layer is only logged (the membership expires anyway)."""
        probe, self.probe = self.probe, None
        if probe is not None:  # joined, and not left yet
            CONNECTIONS.labels(door="sse").dec()
            await probe.leave()
        try:
            await self.layer.group_discard(self.group, self.channel)
        except LAYER_ERRORS as exc:
            logger.warning("SSE: could not leave %s: %s: %s", self.group, type(exc).__name__, exc)


class GroupsLost(Exception):
    """The channel layer forgot a stream's groups: its probe did not come back."""


# What ends a stream with `stream_interrupted`.
STREAM_BROKEN: tuple[type[BaseException], ...] = (*LAYER_ERRORS, GroupsLost)


async def live(subscription: Subscription) -> AsyncGenerator[dict[str, Any] | None, None]:
    """The subscription's messages as they come, and None after each SSE_KEEPALIVE_SECONDS
    without one; raises LAYER_ERRORS or GroupsLost. One receive stays pending across the
    quiet spells: cancelling a channels_redis receive drops what its channel had buffered and
    can hold the next receive for seconds (keepalives stalled 44-140 s behind that)."""
    loop = asyncio.get_running_loop()
    layer, probe = subscription.layer, subscription.probe
    assert probe is not None  # (joined)
    receiver = asyncio.ensure_future(layer.receive(subscription.channel))
    quiet_until = loop.time() + settings.SSE_KEEPALIVE_SECONDS
    probe_at = loop.time()
    try:
        while True:
            # Messages already here first: the probe's answer may be among them (a client slow
            # to read, a burst of events), and only an empty channel can say it did not come.
            if not receiver.done() and loop.time() >= probe_at:
                if not await probe.send_next():
                    raise GroupsLost
                probe_at = loop.time() + settings.RELAY_PROBE_SECONDS
            wait = max(0.0, min(probe_at, quiet_until) - loop.time())
            done, _ = await asyncio.wait({receiver}, timeout=wait)
            if not done:
                if loop.time() >= quiet_until:
                    quiet_until = loop.time() + settings.SSE_KEEPALIVE_SECONDS
                    yield None
                continue
            message = receiver.result()
            receiver = asyncio.ensure_future(layer.receive(subscription.channel))
            if message.get("type") == PROBE_TYPE:
                probe.came_back()
                continue
            quiet_until = loop.time() + settings.SSE_KEEPALIVE_SECONDS
            yield message
    finally:
        receiver.cancel()


async def _stream(
    subscription: Subscription,
    snapshot: dict[str, Any],
    keep: Callable[[dict[str, Any]], bool],
    last: Callable[[dict[str, Any]], bool],
    language: str,
) -> AsyncIterator[str]:
    """Snapshot first (the persisted truth), then live events until `last` says stop; a failing
    channel layer ends the stream with an `error` event (the client reconnects) in `language`,
    the request's (the stream outlives the view that activated it)."""
    counter = 1
    try:
        yield "retry: 2000\n\n" + _sse(snapshot, counter)
        if last(snapshot):
            return
        async with aclosing(live(subscription)) as messages:
            async for message in messages:
                if message is None:
                    yield ": keepalive\n\n"
                    continue
                event = message.get("event") or {}
                if keep(event):
                    counter += 1
                    yield _sse(event, counter)
                    if last(event):
                        return
    except STREAM_BROKEN as exc:
        logger.warning(
            "SSE stream of %s ended: channel layer failed: %s: %s",
            subscription.group,
            type(exc).__name__,
            exc,
        )
        with translation.override(language):
            interrupted = _interrupted(snapshot)
        yield _sse(interrupted, counter + 1)
    finally:
        await subscription.leave()


def _interrupted(snapshot: dict[str, Any]) -> dict[str, Any]:
    error = AppError(ERROR_INTERRUPTED, _("The live event stream broke; reconnect to resume."))
    return envelope(
        "error", session_id=snapshot["session_id"], run_id=snapshot["run_id"], data=error.as_dict()
    )


def _streaming(body: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # let proxies pass events at once
    return response


async def session_events(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """GET: a session's events. Each (re)connection, with or without Last-Event-ID, starts
    with `session.snapshot` (saved messages plus in-flight ones), then live events."""
    try:
        user = await _user(request)
        if user is None:
            return _error(401, "not_authenticated", _(NOT_AUTHENTICATED))
        session = await database_sync_to_async(access_session)(user, session_id)
    except exceptions.AuthenticationFailed as exc:
        return _error(401, "authentication_failed", str(exc.detail))
    except AppError as exc:
        return JsonResponse({"error": exc.as_dict()}, status=exc.status)
    subscription = Subscription(session_group(session.id))
    snapshot = await join_then_load(subscription, lambda: session_snapshot_turns(session=session))
    if snapshot is None:
        return _unavailable()
    event = envelope("session.snapshot", session_id=session.id, data=snapshot)
    body = _stream(subscription, event, lambda e: True, lambda e: False, translation.get_language())
    return _streaming(body)


async def run_events(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """GET: one turn's events (the run and every expert below it); ends with its
    `run.completed`. Starts with `session.snapshot` limited to that turn."""
    try:
        user = await _user(request)
        if user is None:
            return _error(401, "not_authenticated", _(NOT_AUTHENTICATED))
        run = await database_sync_to_async(access_run)(user, run_id)
    except exceptions.AuthenticationFailed as exc:
        return _error(401, "authentication_failed", str(exc.detail))
    except AppError as exc:
        return JsonResponse({"error": exc.as_dict()}, status=exc.status)

    def load() -> tuple[dict[str, Any], set[str], bool]:
        ids = {r.id for r in run_tree(run=run)}
        snapshot = session_snapshot_turns(session=run.session, run_ids=ids)
        finished = type(run).objects.get(pk=run.pk).is_final
        return snapshot, {str(i) for i in ids}, finished

    subscription = Subscription(session_group(run.session_id))
    loaded = await join_then_load(subscription, load)
    if loaded is None:
        return _unavailable()
    snapshot, tree, finished = loaded

    def keep(event: dict[str, Any]) -> bool:
        if event.get("type") == "delegation.started" and event.get("run_id") in tree:
            child = (event.get("data") or {}).get("run_id")
            if child:
                tree.add(child)  # the expert's events belong to this turn too
        return event.get("run_id") in tree

    def last(event: dict[str, Any]) -> bool:
        if event.get("type") == "session.snapshot":
            return finished
        return event.get("type") == "run.completed" and event.get("run_id") == str(run.id)

    event = envelope("session.snapshot", session_id=run.session_id, run_id=run.id, data=snapshot)
    return _streaming(_stream(subscription, event, keep, last, translation.get_language()))


async def join_then_load(subscription: Subscription, load: Callable[[], T]) -> T | None:
    """Join the group, then read the snapshot with `load`: an event emitted in between waits
    in the channel instead of being lost. None (logged) when the channel layer is down."""
    try:
        await subscription.join()
    except LAYER_ERRORS as exc:
        logger.warning("SSE: cannot join %s: %s: %s", subscription.group, type(exc).__name__, exc)
        return None
    try:
        return await database_sync_to_async(load)()
    except BaseException:
        await subscription.leave()
        raise


def _unavailable() -> JsonResponse:
    return _error(503, ERROR_INTERRUPTED, _("Live events are unavailable; retry shortly."))
