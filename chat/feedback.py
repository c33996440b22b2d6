"""Thumbs up or down on answers, with an optional note: one per user and answer, visible in
admin; a user reads and writes only feedback on their own sessions' answers."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from chat.models import ChatMessage, ChatSession, MessageFeedback, MessageRole
from config.errors import AppError, NotFound

NOTE_MAX_CHARS = 2000


def access_answer(user: Any, session_id: uuid.UUID, message_id: uuid.UUID) -> ChatMessage:
    """An agent message of the user's own session; anything else is answered as missing."""
    message = (
        ChatMessage.objects.filter(
            pk=message_id, session_id=session_id, session__user=user, role=MessageRole.AGENT
        )
        .select_related("session")
        .first()
    )
    if message is None:
        raise NotFound("message")
    return message


@transaction.atomic
def feedback_set(
    *, user: Any, message: ChatMessage, rating: int, note: str = ""
) -> MessageFeedback:
    """Record (or change) the user's rating of an answer; the note replaces the earlier one."""
    if rating not in (1, -1):
        raise AppError("invalid", _("Rate 1 (up) or -1 (down)."), details={"rating": "1 or -1"})
    note = note.strip()
    if "\x00" in note:
        problem = _("The note contains a NUL character.")
        raise AppError("invalid", problem, details={"note": "NUL"})
    if len(note) > NOTE_MAX_CHARS:
        raise AppError(
            "invalid",
            _("The note is %(length)s characters; the limit is %(limit)s.")
            % {"length": len(note), "limit": NOTE_MAX_CHARS},
            details={"note": f"at most {NOTE_MAX_CHARS} characters"},
        )
    feedback, _created = MessageFeedback.objects.update_or_create(
        message=message, user=user, defaults={"rating": rating, "note": note}
    )
    return feedback


def feedback_clear(*, user: Any, message: ChatMessage) -> None:
    """Take the user's rating of an answer back."""
    MessageFeedback.objects.filter(message=message, user=user).delete()


def feedback_of_session(*, user: Any, session: ChatSession) -> dict[str, dict[str, Any]]:
    """The user's ratings in a session: {message id: {rating, note}}."""
    rows = MessageFeedback.objects.filter(user=user, message__session=session).values(
        "message_id", "rating", "note"
    )
    return {str(r["message_id"]): {"rating": r["rating"], "note": r["note"]} for r in rows}
