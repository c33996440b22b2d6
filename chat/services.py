"""Writes of chat data: sessions, agent messages (upserted by id) and user preferences."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db.models.constants import OnConflict
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.selectors import agent_entry_for
from chat.models import ChatMessage, ChatPreference, ChatSession, MessageRole, MessageStatus
from config.db.prepared import PreparedInsert
from config.errors import AppError

# An agent or tool message written whole, by id: a replayed step rewrites it (compiled once per
# connection).
_UPSERT = PreparedInsert(
    ChatMessage,
    on_conflict=OnConflict.UPDATE,
    unique_fields=["id"],
    update_fields=[
        "content",
        "tool",
        "status",
        "agent",
        "model",
        "citations",
        "usage",
        "updated_at",
    ],
)
# A streaming message's first save, unless its run's end wrote it first.
_FIRST_SAVE = PreparedInsert(ChatMessage, on_conflict=OnConflict.IGNORE)


def message_upsert(**fields: Any) -> None:
    """Insert or update an agent/tool message in one statement (a replayed step rewrites it);
    `fields` as `_message_row` takes them.

    NUL characters (which Postgres cannot store) are dropped from model-written text.
    `created_at`: when it appeared, if before now (kept by an update).
    """
    _UPSERT.insert(_message_row(**fields))


def _message_row(
    *,
    message_id: uuid.UUID,
    session_id: uuid.UUID,
    role: str,
    run_id: uuid.UUID | None,
    agent: dict[str, Any] | None,
    status: str,
    content: str = "",
    tool: dict[str, Any] | None = None,
    model: str = "",
    citations: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    created_at: datetime | None = None,
) -> ChatMessage:
    """The whole row `message_upsert` writes, unsaved."""
    return ChatMessage(
        id=message_id,
        created_at=created_at or timezone.now(),
        session_id=session_id,
        role=role,
        run_id=run_id,
        agent=agent,
        content=_storable(content),
        tool=tool,
        status=status,
        model=model,
        citations=citations or [],
        usage=usage or None,
    )


def message_text_save(
    *, message_id: uuid.UUID, content: str, new: dict[str, Any] | None = None
) -> None:
    """Save a streaming agent message's text so far (a partial save mid-stream); nothing when
    the message is no longer streaming (its run's end closed it, or removed it). `new`: the
    message's other fields (session_id, run_id, agent, model, created_at) when this may be
    its first save: without a row it is created, streaming."""
    content = _storable(content)
    updated = ChatMessage.objects.filter(pk=message_id, status=MessageStatus.STREAMING).update(
        content=content, updated_at=timezone.now()
    )
    if not updated and new is not None:
        first = ChatMessage(
            id=message_id,
            role=MessageRole.AGENT,
            status=MessageStatus.STREAMING,
            content=content,
            **new,
        )
        _FIRST_SAVE.insert(first)  # closed meanwhile: left as it is


def _storable(text: str) -> str:
    """`text` without NUL characters, which Postgres cannot store."""
    return text.replace("\x00", "") if "\x00" in text else text


def preference_set_timezone(*, user: Any, timezone_name: str) -> ChatPreference:
    """Remember the user's IANA timezone (used by tools for "now")."""
    try:
        ZoneInfo(timezone_name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        message = _("Unknown timezone %(name)s.") % {"name": repr(timezone_name)}
        raise AppError("invalid_timezone", message) from exc
    # The page sends it with every message: written only when it changed.
    preference = ChatPreference.objects.filter(user=user).first()
    if preference is None:
        preference, created = ChatPreference.objects.get_or_create(
            user=user, defaults={"timezone": timezone_name}
        )
    if preference.timezone != timezone_name:
        preference.timezone = timezone_name
        preference.save(update_fields=["timezone"])
    return preference


def session_create(
    *, user: Any, session_id: uuid.UUID | None = None, title: str = ""
) -> ChatSession:
    """A new empty session with the entry agent (idempotent for the owner's own id)."""
    session_id = session_id or uuid.uuid4()
    existing = ChatSession.objects.filter(pk=session_id).first()
    if existing is not None:
        if existing.user_id != user.pk:
            message = _("That session id is already in use.")
            raise AppError("session_id_conflict", message, status=409)
        return existing
    agent = agent_entry_for(user=user)
    return ChatSession.objects.create(id=session_id, user=user, agent=agent, title=title[:200])


def session_rename(*, session: ChatSession, title: str) -> ChatSession:
    """Give the session a new title."""
    session.title = title.strip()[:200]
    session.save(update_fields=["title", "updated_at"])
    return session
