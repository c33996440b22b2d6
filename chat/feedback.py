"""Thumbs up or down on answers, with an optional note: one per user and answer, visible in
admin; a user reads and writes only feedback on their own sessions' answers."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from chat.models import ChatMessage, ChatSession, MessageFeedback, MessageRole
from config.errors import AppError, NotFound

NOTE_MAX_CHARS = 2000
# Who hears that a rating changed: (message, rating before, rating now; None: none), in the
# rating's transaction, once per change. Registered from a higher app's AppConfig.ready()
# (delegation.routing counts it for the expert that answered).
RATING_LISTENERS: list[Callable[[ChatMessage, int | None, int | None], None]] = []


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
    # Read under the row's lock (a concurrent first rating waits for this one), so the change
    # each listener hears is the one this write makes.
    feedback, created = MessageFeedback.objects.select_for_update().get_or_create(
        message=message, user=user, defaults={"rating": rating, "note": note}
    )
    before = None if created else feedback.rating
    if not created:
        feedback.rating, feedback.note = rating, note
        feedback.save(update_fields=["rating", "note", "updated_at"])
    _rating_changed(message, before, rating)
    return feedback


@transaction.atomic
def feedback_clear(*, user: Any, message: ChatMessage) -> None:
    """Take the user's rating of an answer back."""
    feedback = MessageFeedback.objects.select_for_update().filter(message=message, user=user)
    before = feedback.values_list("rating", flat=True).first()
    if before is not None:
        MessageFeedback.objects.filter(message=message, user=user).delete()
        _rating_changed(message, before, None)


def _rating_changed(message: ChatMessage, before: int | None, now: int | None) -> None:
    if before != now:
        for listener in RATING_LISTENERS:
            listener(message, before, now)


def feedback_of_session(*, user: Any, session: ChatSession) -> dict[str, dict[str, Any]]:
    """The user's ratings in a session: {message id: {rating, note}}."""
    rows = MessageFeedback.objects.filter(user=user, message__session=session).values(
        "message_id", "rating", "note"
    )
    return {str(r["message_id"]): {"rating": r["rating"], "note": r["note"]} for r in rows}
