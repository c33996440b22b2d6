"""Reads of chat data, always scoped to the requesting user."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet

from chat.models import ChatMessage, ChatSession
from config.errors import NotFound


def access_session(user: Any, session_id: uuid.UUID | str) -> ChatSession:
    """The user's own session; another user's id is answered exactly like a missing one."""
    session = ChatSession.objects.filter(pk=session_id, user=user).first()
    if session is None:
        raise NotFound("session")
    return session


def sessions_of(*, user: Any) -> QuerySet[ChatSession]:
    """The user's sessions, most recently active first."""
    return ChatSession.objects.filter(user=user).order_by("-updated_at")


def session_messages(*, session: ChatSession) -> QuerySet[ChatMessage]:
    """A session's messages in the order they were shown."""
    return session.messages.order_by("created_at", "id")


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
        "citations": message.citations,
        "created_at": message.created_at.isoformat(),
        "updated_at": message.updated_at.isoformat(),
    }
