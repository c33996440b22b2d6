"""Server-Sent Events: the websocket's event stream for API clients, per session or per run."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from rest_framework import exceptions

from chat.events import envelope, session_group
from chat.selectors import access_session
from chat.tokens import ApiTokenAuthentication
from config.errors import AppError
from delegation.selectors import access_run, run_tree, session_snapshot


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


async def _stream(
    group: str,
    snapshot: dict[str, Any],
    keep: Callable[[dict[str, Any]], bool],
    last: Callable[[dict[str, Any]], bool],
) -> AsyncIterator[str]:
    """Snapshot first (the persisted truth), then live events until `last` says stop."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)  # before the snapshot: no event falls in between
    counter = 1
    try:
        yield "retry: 2000\n\n" + _sse(snapshot, counter)
        if last(snapshot):
            return
        while True:
            try:
                message = await asyncio.wait_for(
                    layer.receive(channel), timeout=settings.SSE_KEEPALIVE_SECONDS
                )
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            event = message.get("event") or {}
            if keep(event):
                counter += 1
                yield _sse(event, counter)
                if last(event):
                    return
    finally:
        await layer.group_discard(group, channel)


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
            return _error(401, "not_authenticated", "Authentication credentials were not provided.")
        session = await database_sync_to_async(access_session)(user, session_id)
        snapshot = await database_sync_to_async(session_snapshot)(session=session)
    except exceptions.AuthenticationFailed as exc:
        return _error(401, "authentication_failed", str(exc.detail))
    except AppError as exc:
        return JsonResponse({"error": exc.as_dict()}, status=exc.status)
    event = envelope("session.snapshot", session_id=session.id, data=snapshot)
    return _streaming(_stream(session_group(session.id), event, lambda e: True, lambda e: False))


async def run_events(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """GET: one turn's events (the run and every expert below it); ends with its
    `run.completed`. Starts with `session.snapshot` limited to that turn."""
    try:
        user = await _user(request)
        if user is None:
            return _error(401, "not_authenticated", "Authentication credentials were not provided.")
        run = await database_sync_to_async(access_run)(user, run_id)

        def load() -> tuple[dict[str, Any], set[str]]:
            ids = {r.id for r in run_tree(run=run)}
            return session_snapshot(session=run.session, run_ids=ids), {str(i) for i in ids}

        snapshot, tree = await database_sync_to_async(load)()
        finished = await database_sync_to_async(lambda: type(run).objects.get(pk=run.pk).is_final)()
    except exceptions.AuthenticationFailed as exc:
        return _error(401, "authentication_failed", str(exc.detail))
    except AppError as exc:
        return JsonResponse({"error": exc.as_dict()}, status=exc.status)

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
    return _streaming(_stream(session_group(run.session_id), event, keep, last))
