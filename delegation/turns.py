"""Turns: a user's message starts the entry agent's run; stopping a turn stops its whole tree.

The one place the websocket, the REST API and scheduled prompts start and stop turns.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from agents.models import Agent
from agents.selectors import agent_entry_for, agent_usable_by
from chat.events import emit, envelope
from chat.models import ChatMessage, ChatSession, MessageRole
from chat.selectors import message_as_event_data
from chat.services import session_title_from
from config.errors import AppError, NotFound
from delegation.ending import run_stop
from delegation.models import Run
from delegation.selectors import model_history, session_active_run
from delegation.services import run_create, run_enqueue

ROUTING_FLAGS = ("force_strict", "force_guide", "debug")


@dataclass(frozen=True)
class SentMessage:
    """The stored user message, the run answering it, and whether this call created them."""

    message: ChatMessage
    run: Run | None
    created: bool


def turn_start(
    *,
    user: Any,
    session_id: uuid.UUID,
    message_id: uuid.UUID,
    text: str,
    flags: dict[str, bool] | None = None,
) -> SentMessage:
    """Store the user's message and start the entry agent on it; a repeated id changes nothing.

    `flags`: `force_strict` / `force_guide` (routing overrides) and `debug` (a staff user's
    socket gets the `routing.decided` event).
    """
    request = {k: bool(v) for k, v in (flags or {}).items() if k in ROUTING_FLAGS and v}
    text = text.strip()
    if not text:
        raise AppError("empty_message", "The message is empty.")
    if "\x00" in text:
        raise AppError("invalid", "The message contains a NUL character.", details={"text": "NUL"})
    if len(text) > settings.CHAT_MAX_MESSAGE_CHARS:
        raise AppError(
            "message_too_long",
            f"The message is {len(text)} characters; "
            f"the limit is {settings.CHAT_MAX_MESSAGE_CHARS}.",
        )
    for attempt in range(2):
        try:
            return _start(
                user=user, session_id=session_id, message_id=message_id, text=text, flags=request
            )
        except IntegrityError:
            if attempt:  # a concurrent duplicate won the race twice: something else is wrong
                raise
    raise AssertionError("unreachable")


@transaction.atomic
def _start(
    *, user: Any, session_id: uuid.UUID, message_id: uuid.UUID, text: str, flags: dict[str, bool]
) -> SentMessage:
    existing = ChatMessage.objects.filter(pk=message_id).select_related("session").first()
    if existing is not None:
        if existing.session.user_id != user.pk or existing.session_id != session_id:
            raise AppError("message_id_conflict", "That message id is already in use.", status=409)
        return SentMessage(existing, Run.objects.filter(user_message=existing).first(), False)
    session = ChatSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        agent = agent_entry_for(user=user)
        session = ChatSession.objects.create(
            id=session_id, user=user, agent=agent, title=session_title_from(text)
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
        routing_request=flags,
    )
    if not session.title:  # a session created empty is named after its first message
        session.title = session_title_from(text)
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
    run_enqueue(run_id=run.id)
    return SentMessage(message, run, True)


def _session_agent(*, session: ChatSession, user: Any) -> Agent:
    """The agent the session talks to; if it was disabled or closed to the user, the entry agent."""
    agent = session.agent
    if agent is not None and agent.enabled and agent_usable_by(agent=agent, user=user):
        return agent
    return agent_entry_for(user=user)


def turn_stop(*, run: Run) -> bool:
    """Stop a turn (or one expert's part of it) and everything below; False if already ended."""
    return run_stop(run=run)


@transaction.atomic
def session_delete(*, session: ChatSession) -> None:
    """Delete the session with its messages; a turn still running in it is stopped first."""
    active = session_active_run(session=session)
    if active is not None:
        run_stop(run=active)
    session.delete()
