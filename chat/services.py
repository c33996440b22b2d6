"""Writes of chat data: sending a message (idempotent by id) and user preferences."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.db import IntegrityError, transaction

from agents.models import Agent
from agents.selectors import agent_entry_for, agent_usable_by
from chat.events import emit, envelope
from chat.models import ChatMessage, ChatPreference, ChatSession, MessageRole
from chat.selectors import message_as_event_data, model_history, session_active_run
from config.enqueue import enqueue
from config.errors import AppError, NotFound
from delegation.models import Run
from delegation.services import run_create


@dataclass(frozen=True)
class SentMessage:
    """The stored user message, the run answering it, and whether this call created them."""

    message: ChatMessage
    run: Run | None
    created: bool


def message_send(
    *, user: Any, session_id: uuid.UUID, message_id: uuid.UUID, text: str
) -> SentMessage:
    """Store the user's message and start the entry agent on it; a repeated id changes nothing."""
    text = text.strip()
    if not text:
        raise AppError("empty_message", "The message is empty.")
    if len(text) > settings.CHAT_MAX_MESSAGE_CHARS:
        raise AppError(
            "message_too_long",
            f"The message is {len(text)} characters; "
            f"the limit is {settings.CHAT_MAX_MESSAGE_CHARS}.",
        )
    for attempt in range(2):
        try:
            return _send(user=user, session_id=session_id, message_id=message_id, text=text)
        except IntegrityError:
            if attempt:  # a concurrent duplicate won the race twice: something else is wrong
                raise
    raise AssertionError("unreachable")


@transaction.atomic
def _send(*, user: Any, session_id: uuid.UUID, message_id: uuid.UUID, text: str) -> SentMessage:
    existing = ChatMessage.objects.filter(pk=message_id).select_related("session").first()
    if existing is not None:
        if existing.session.user_id != user.pk or existing.session_id != session_id:
            raise AppError("message_id_conflict", "That message id is already in use.", status=409)
        return SentMessage(existing, Run.objects.filter(user_message=existing).first(), False)
    session = ChatSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        agent = agent_entry_for(user=user)
        session = ChatSession.objects.create(
            id=session_id, user=user, agent=agent, title=_title(text)
        )
    elif session.user_id != user.pk:
        raise NotFound("session")
    else:
        agent = _session_agent(session=session, user=user)
    if session_active_run(session=session) is not None:
        raise AppError(
            "turn_in_progress",
            "The agent is still answering your previous message; wait or stop it.",
        )
    transcript = [*model_history(session=session), {"role": "user", "content": text}]
    message = ChatMessage.objects.create(
        id=message_id, session=session, role=MessageRole.USER, content=text
    )
    run = run_create(
        agent=agent,
        user=user,
        session=session,
        task=text,
        transcript=transcript,
        user_message=message,
    )
    if not session.title:  # a session created empty is named after its first message
        session.title = _title(text)
    session.save(update_fields=["title", "updated_at"])
    emit(
        envelope(
            "message.created",
            session_id=session.id,
            run_id=run.id,
            message_id=message.id,
            data=message_as_event_data(message),
        )
    )
    from delegation.tasks import advance_run  # tasks import services; keep the cycle lazy

    enqueue(advance_run, str(run.id))
    return SentMessage(message, run, True)


def message_upsert(
    *,
    message_id: uuid.UUID,
    session_id: uuid.UUID,
    role: str,
    run: Run | None,
    agent: dict[str, Any] | None,
    status: str,
    content: str = "",
    tool: dict[str, Any] | None = None,
    model: str = "",
) -> None:
    """Insert or update an agent/tool message in one statement (a replayed step rewrites it)."""
    ChatMessage.objects.bulk_create(
        [
            ChatMessage(
                id=message_id,
                session_id=session_id,
                role=role,
                run=run,
                agent=agent,
                content=content,
                tool=tool,
                status=status,
                model=model,
            )
        ],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["content", "tool", "status", "agent", "model", "updated_at"],
    )


def _session_agent(*, session: ChatSession, user: Any) -> Agent:
    """The agent the session talks to; if it was disabled or closed to the user, the entry agent."""
    agent = session.agent
    if agent is not None and agent.enabled and agent_usable_by(agent=agent, user=user):
        return agent
    return agent_entry_for(user=user)


def _title(text: str) -> str:
    first_line = text.strip().splitlines()[0] if text.strip() else ""
    return first_line[:77] + "…" if len(first_line) > 80 else first_line


def preference_set_timezone(*, user: Any, timezone_name: str) -> ChatPreference:
    """Remember the user's IANA timezone (used by tools for "now")."""
    try:
        ZoneInfo(timezone_name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise AppError("invalid_timezone", f"Unknown timezone {timezone_name!r}.") from exc
    preference, _ = ChatPreference.objects.update_or_create(
        user=user, defaults={"timezone": timezone_name}
    )
    return preference


def session_create(
    *, user: Any, session_id: uuid.UUID | None = None, title: str = ""
) -> ChatSession:
    """A new empty session with the entry agent (idempotent for the owner's own id)."""
    session_id = session_id or uuid.uuid4()
    existing = ChatSession.objects.filter(pk=session_id).first()
    if existing is not None:
        if existing.user_id != user.pk:
            raise AppError("session_id_conflict", "That session id is already in use.", status=409)
        return existing
    agent = agent_entry_for(user=user)
    return ChatSession.objects.create(id=session_id, user=user, agent=agent, title=title[:200])


def session_rename(*, session: ChatSession, title: str) -> ChatSession:
    """Give the session a new title."""
    session.title = title.strip()[:200]
    session.save(update_fields=["title", "updated_at"])
    return session


@transaction.atomic
def session_delete(*, session: ChatSession) -> None:
    """Delete the session with its messages; a turn still running in it is stopped first."""
    from delegation.tree import run_stop

    active = session_active_run(session=session)
    if active is not None:
        run_stop(run=active)
    session.delete()
