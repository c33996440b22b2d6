"""Reads of chat data, always scoped to the requesting user."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from chat.models import ChatMessage, ChatSession, MessageRole
from config.errors import NotFound
from delegation.models import FINAL_STATUSES, Run


def access_session(user: Any, session_id: uuid.UUID | str) -> ChatSession:
    """The user's own session; another user's id is answered exactly like a missing one."""
    session = ChatSession.objects.filter(pk=session_id, user=user).first()
    if session is None:
        raise NotFound("session")
    return session


def access_run(user: Any, run_id: uuid.UUID | str) -> Run:
    """The user's own run, or NotFound."""
    run = Run.objects.filter(pk=run_id, user=user).first()
    if run is None:
        raise NotFound("run")
    return run


def sessions_of(*, user: Any) -> QuerySet[ChatSession]:
    """The user's sessions, most recently active first."""
    return ChatSession.objects.filter(user=user).order_by("-updated_at")


def session_messages(*, session: ChatSession) -> QuerySet[ChatMessage]:
    """A session's messages in the order they were shown."""
    return session.messages.order_by("created_at", "id")


def session_active_run(*, session: ChatSession) -> Run | None:
    """The root run still working in this session, if any."""
    return (
        Run.objects.filter(session=session, parent__isnull=True)
        .exclude(status__in=FINAL_STATUSES)
        .order_by("-created_at")
        .first()
    )


def message_as_event_data(message: ChatMessage) -> dict[str, Any]:
    """A stored message in the shape the snapshot and the live stream share."""
    return {
        "id": str(message.id),
        "role": message.role,
        "run_id": str(message.run_id) if message.run_id else None,
        "agent": message.agent,
        "content": message.content,
        "model": message.model,
        "tool": message.tool,
        "status": message.status,
        "created_at": message.created_at.isoformat(),
        "updated_at": message.updated_at.isoformat(),
    }


def session_snapshot(*, session: ChatSession, run_ids: set[Any] | None = None) -> dict[str, Any]:
    """The saved transcript with in-flight messages, as `session.snapshot` carries it; with
    `run_ids`, only that turn (its user message and the messages of those runs)."""
    messages = session_messages(session=session)
    if run_ids is not None:
        user_messages = Run.objects.filter(pk__in=run_ids).values("user_message_id")
        messages = messages.filter(Q(run_id__in=run_ids) | Q(pk__in=user_messages))
    active = session_active_run(session=session)
    return {
        "session": {"id": str(session.id), "title": session.title},
        "messages": [message_as_event_data(m) for m in messages],
        "active_run_id": str(active.id) if active else None,
    }


def model_history(*, session: ChatSession) -> list[dict[str, Any]]:
    """Earlier turns of the session as model messages: each user text and its final answer."""
    runs = (
        Run.objects.filter(session=session, parent__isnull=True, status__in=FINAL_STATUSES)
        .order_by("-created_at")
        .only("task", "answer", "error", "status")[: settings.CHAT_HISTORY_TURNS]
    )
    history: list[dict[str, Any]] = []
    for run in reversed(list(runs)):
        history.append({"role": MessageRole.USER.value, "content": run.task})
        reply = run.answer or f"(no answer: {(run.error or {}).get('message', run.status)})"
        history.append({"role": "assistant", "content": reply})
    return history
