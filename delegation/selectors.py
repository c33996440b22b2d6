"""Reads of runs, always scoped to the requesting user: access, a session's turns, a turn's tree."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from chat.models import ChatMessage, ChatSession, MessageRole, MessageStatus
from chat.selectors import message_as_event_data, session_messages
from config.errors import NotFound
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.routing.selectors import session_modes


def run_tree(*, run: Run) -> list[Run]:
    """Every run of the turn `run` belongs to, depth first (each caller before its experts)."""
    root_id = run.root_id_or_self
    runs = list(
        Run.objects.filter(Q(pk=root_id) | Q(root_id=root_id))
        .select_related("agent", "user")
        .order_by("created_at")
    )
    children: dict[object, list[Run]] = {}
    for item in runs:
        children.setdefault(item.parent_id, []).append(item)
    ordered: list[Run] = []
    stack = [r for r in reversed(children.get(None, []))]
    while stack:
        current = stack.pop()
        ordered.append(current)
        stack.extend(reversed(children.get(current.id, [])))
    return ordered


def access_run(user: Any, run_id: uuid.UUID | str) -> Run:
    """The user's own run, or NotFound."""
    run = Run.objects.filter(pk=run_id, user=user).first()
    if run is None:
        raise NotFound("run")
    return run


def session_active_run(*, session: ChatSession) -> Run | None:
    """The root run still working in this session, if any."""
    return (
        Run.objects.filter(session=session, parent__isnull=True)
        .exclude(status__in=FINAL_STATUSES)
        .order_by("-created_at")
        .first()
    )


def session_snapshot(*, session: ChatSession, run_ids: set[Any] | None = None) -> dict[str, Any]:
    """The saved transcript with in-flight messages, as `session.snapshot` carries it: its
    newest messages within SNAPSHOT_MAX_BYTES, `has_earlier` saying whether older ones exist
    (`session_history` pages them); with `run_ids`, only that turn (its user message and the
    messages of those runs)."""
    messages = session_messages(session=session)
    if run_ids is not None:
        user_messages = Run.objects.filter(pk__in=run_ids).values("user_message_id")
        messages = messages.filter(Q(run_id__in=run_ids) | Q(pk__in=user_messages))
    newest, has_earlier = _newest_within(messages, settings.SNAPSHOT_MAX_BYTES)
    active = session_active_run(session=session)
    return {
        "session": {"id": str(session.id), "title": session.title},
        "messages": _as_shown(newest),
        "has_earlier": has_earlier,
        "active_run_id": str(active.id) if active else None,
        "modes": session_modes(session=session),
    }


def session_history(*, session: ChatSession, before: uuid.UUID) -> dict[str, Any]:
    """The messages of the session just before the message `before` (a page within
    SNAPSHOT_MAX_BYTES, in order), and whether older ones exist; NotFound when `before` is no
    message of this session."""
    anchor = session.messages.filter(pk=before).values("created_at", "id").first()
    if anchor is None:
        raise NotFound("message")
    older = session_messages(session=session).filter(
        Q(created_at__lt=anchor["created_at"])
        | Q(created_at=anchor["created_at"], id__lt=anchor["id"])
    )
    page, has_earlier = _newest_within(older, settings.SNAPSHOT_MAX_BYTES)
    return {"messages": _as_shown(page), "has_earlier": has_earlier}


SNAPSHOT_SLICE = 100  # messages read at a time, newest first, until the budget is spent


def _newest_within(messages: QuerySet[ChatMessage], budget: int) -> tuple[list[dict], bool]:
    """The newest of `messages` (ordered oldest first) whose event data fit in `budget` bytes
    of JSON, in order (at least one), and whether any older one was left out."""
    taken: list[dict[str, Any]] = []
    used = 0
    newest_first = messages.reverse()
    # Slices, not .iterator(): a server-side cursor per join would not survive PgBouncer in
    # transaction mode (docs/operations.md).
    start = 0
    while True:
        page = list(newest_first[start : start + SNAPSHOT_SLICE])
        for message in page:
            data = message_as_event_data(message)
            used += len(json.dumps(data, ensure_ascii=False).encode())
            if taken and used > budget:
                return taken[::-1], True
            taken.append(data)
        if len(page) < SNAPSHOT_SLICE:
            return taken[::-1], False
        start += SNAPSHOT_SLICE


def orphan_status(run_status: str) -> str:
    """The status an agent message still streaming after its run ended is closed with."""
    return MessageStatus.CANCELLED if run_status == RunStatus.CANCELLED else MessageStatus.FAILED


def _as_shown(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the page should show them: one still saved as streaming although its run
    has ended is a late start the end did not see (its worker closes or removes the row at its
    next write, with no event): shown closed as its run ended, or left out if it is empty."""
    streaming = {
        m["run_id"]
        for m in messages
        if m["status"] == MessageStatus.STREAMING and m["role"] == MessageRole.AGENT
    }
    if not streaming:
        return messages
    runs = Run.objects.filter(pk__in=streaming, status__in=FINAL_STATUSES)
    ended = {str(run_id): status for run_id, status in runs.values_list("id", "status")}
    shown = []
    for message in messages:
        run_status = ended.get(message["run_id"], "")
        if message["status"] != MessageStatus.STREAMING or not run_status:
            shown.append(message)
        elif message["content"]:
            shown.append({**message, "status": orphan_status(run_status)})
    return shown
