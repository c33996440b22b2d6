"""Trying a turn again and editing its message: the new turn continues from that point and
what it replaces stays in the history as an older branch (`ChatMessage.superseded_by`)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from chat.models import ChatMessage, ChatSession, MessageRole
from config.errors import AppError, NotFound
from delegation.models import Run
from delegation.turns.start import (
    SentMessage,
    clean_text,
    ensure_no_turn_unfinished,
    existing_message,
    retried_on_conflict,
    routing_flags,
    session_agent,
    turn_begin,
)


def turn_regenerate(
    *,
    user: Any,
    session_id: uuid.UUID,
    message_id: uuid.UUID,
    flags: dict[str, bool] | None = None,
    language: str = "",
) -> SentMessage:
    """Answer one of the user's messages again (try again, also after a stop or a failure): a
    new turn for the same message; the answers after it become an older branch. `language`:
    the page's (see turn_start)."""
    with transaction.atomic():
        session, message = _own_user_message(
            user=user, session_id=session_id, message_id=message_id
        )
        ensure_no_turn_unfinished(session)
        agent = session_agent(session=session, user=user)
        run = turn_begin(
            session=session,
            agent=agent,
            user=user,
            message=message,
            flags=routing_flags(flags),
            announce=False,
            language=language,
        )
        _supersede(session=session, after=message, by=run, including=False)
        session.save(update_fields=["updated_at"])
    return SentMessage(message, run, True)


def turn_edit(
    *,
    user: Any,
    session_id: uuid.UUID,
    message_id: uuid.UUID,
    new_message_id: uuid.UUID,
    text: str,
    flags: dict[str, bool] | None = None,
    language: str = "",
) -> SentMessage:
    """Send an edited version of one of the user's messages as a new message (`new_message_id`,
    idempotent like `turn_start`); the original and everything after it become an older branch.
    `language`: the page's (see turn_start)."""
    return retried_on_conflict(
        _edit,
        user=user,
        session_id=session_id,
        message_id=message_id,
        new_message_id=new_message_id,
        text=clean_text(text),
        flags=routing_flags(flags),
        language=language,
    )


@transaction.atomic
def _edit(
    *,
    user: Any,
    session_id: uuid.UUID,
    message_id: uuid.UUID,
    new_message_id: uuid.UUID,
    text: str,
    flags: dict[str, bool],
    language: str,
) -> SentMessage:
    existing = existing_message(user=user, session_id=session_id, message_id=new_message_id)
    if existing is not None:
        if existing.message.edited_from_id != message_id:
            conflict = _("That message id is already in use.")
            raise AppError("message_id_conflict", conflict, status=409)
        return existing
    session, original = _own_user_message(user=user, session_id=session_id, message_id=message_id)
    ensure_no_turn_unfinished(session)
    agent = session_agent(session=session, user=user)
    message = ChatMessage.objects.create(
        id=new_message_id,
        session=session,
        role=MessageRole.USER,
        content=text,
        edited_from=original,
    )
    # The new message is answered from the history before the original, not after it.
    run = turn_begin(
        session=session,
        agent=agent,
        user=user,
        message=message,
        flags=flags,
        since=original,
        language=language,
    )
    _supersede(session=session, after=original, by=run, including=True, keep=message)
    session.save(update_fields=["updated_at"])
    return SentMessage(message, run, True)


def _own_user_message(
    *, user: Any, session_id: uuid.UUID, message_id: uuid.UUID
) -> tuple[ChatSession, ChatMessage]:
    """The user's session (locked) and one of its user messages on the current branch."""
    session = ChatSession.objects.select_for_update().filter(pk=session_id, user=user).first()
    if session is None:
        raise NotFound("session")
    message = session.messages.filter(pk=message_id, role=MessageRole.USER).first()
    if message is None:
        raise NotFound("message")
    if message.superseded_by is not None:
        raise AppError(
            "message_superseded",
            _("That message was replaced by a newer version; edit or retry the newer one."),
            status=409,
        )
    return session, message


def _supersede(
    *,
    session: ChatSession,
    after: ChatMessage,
    by: Run,
    including: bool,
    keep: ChatMessage | None = None,
) -> None:
    """Mark what came after `after` (and `after` itself if `including`) as replaced by `by`;
    older branches in that stretch move under `by` too, so each fold holds all it replaced."""
    later = session.messages.filter(created_at__gt=after.created_at)
    if keep is not None:
        later = later.exclude(pk=keep.pk)
    later.update(superseded_by=by.id)
    if including:
        session.messages.filter(pk=after.pk).update(superseded_by=by.id)
