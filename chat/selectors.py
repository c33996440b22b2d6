"""Reads of chat data, always scoped to the requesting user."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from chat.models import ChatMessage, ChatSession, MessageRole
from chat.script_fold import contains_folded, find_folded
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
        "usage": message.usage,
        "origin": message.origin,
        "edited_from": str(message.edited_from_id) if message.edited_from_id else None,
        "superseded_by": str(message.superseded_by) if message.superseded_by else None,
        "created_at": message.created_at.isoformat(),
        "updated_at": message.updated_at.isoformat(),
    }


SNIPPET_CHARS = 90


def sessions_titled(*, user: Any, query: str) -> QuerySet[ChatSession]:
    """The user's sessions whose title contains `query` (case and 繁/简 folded: 请假 finds
    請假), most recently active first."""
    return sessions_of(user=user).filter(contains_folded("title", query.strip()))


def sessions_search(*, user: Any, query: str) -> QuerySet[ChatSession]:
    """The user's sessions whose title or any user or agent message contains `query` (case
    insensitive, 繁/简 folded: 请假 finds 請假 and back), most recently active first."""
    query = query.strip()
    hits = ChatMessage.objects.filter(
        contains_folded("content", query),
        session=OuterRef("pk"),
        role__in=[MessageRole.USER, MessageRole.AGENT],
    )
    return sessions_of(user=user).filter(contains_folded("title", query) | Exists(hits))


def search_snippet(*, session: ChatSession, query: str) -> str:
    """A short excerpt of the session's latest message containing `query` ("" when only the
    title matched)."""
    query = query.strip()
    message = (
        session.messages.filter(
            contains_folded("content", query),
            role__in=[MessageRole.USER, MessageRole.AGENT],
        )
        .order_by("-created_at")
        .only("content")
        .first()
    )
    if message is None:
        return ""
    text = " ".join(message.content.split())
    at = max(find_folded(text, query), 0)
    start = max(0, at - SNIPPET_CHARS // 3)
    excerpt = text[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + excerpt + ("…" if start + SNIPPET_CHARS < len(text) else "")
