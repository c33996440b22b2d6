"""Delivering due reminders: a message in the user's "Reminders" chat session, a `reminder.due`
event to every open socket of the user (after commit), and an email when configured."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from chat.events import emit_to_user, envelope
from chat.models import ChatMessage, ChatPreference, ChatSession, MessageRole, MessageStatus
from chat.selectors import message_as_event_data
from reminders.dates import day_short_time
from reminders.models import Channel, Reminder

# Reminder messages are shown as coming from "Reminders": the dispatcher, not an agent (no run).
AGENT_NAME = "reminder-service"
_IDS = uuid.UUID("0d7c1f7e-8a57-4a52-b1a4-2f3c61e0a8d4")  # namespace of derived ids


def reminder_session_id(user_id: int) -> uuid.UUID:
    """The id of the user's dedicated "Reminders" chat session (the same on every server)."""
    return uuid.uuid5(_IDS, f"session:{user_id}")


def reminder_message_id(reminder_id: int) -> uuid.UUID:
    """The chat message id of a reminder: a repeated delivery writes the same row."""
    return uuid.uuid5(_IDS, f"message:{reminder_id}")


def agent_tag() -> dict[str, Any]:
    """Who reminder messages come from, named in the active language."""
    return {
        "kind": "entry",
        "name": AGENT_NAME,
        "display_name": _("Reminders"),
        "depth": 0,
        "path": [AGENT_NAME],
    }


def session_title() -> str:
    """The title of a user's Reminders chat session, in the active language."""
    return _("Reminders")


def deliver_to_chat(reminders: list[Reminder], *, now: datetime, late_ids: set[int]) -> None:
    """Write each reminder into its user's Reminders session (inside the caller's transaction,
    so the message exists exactly when the reminder is marked sent) and emit `reminder.due` to
    the user's sockets once that transaction commits."""
    if not reminders:
        return
    sessions = {r.user_id: reminder_session_id(r.user_id) for r in reminders}
    languages = {r.user_id: r.language for r in reversed(reminders)}  # each user's first
    existing = set(
        ChatSession.objects.filter(pk__in=sessions.values()).values_list("pk", flat=True)
    )
    ChatSession.objects.bulk_create(
        [
            _new_session(sid, uid, languages[uid])
            for uid, sid in sorted(sessions.items(), key=lambda pair: pair[1])
            if sid not in existing
        ],
        # Another dispatcher may insert the same new session meanwhile: the same (sorted) order
        # everywhere means one waits for the other instead of a deadlock.
        ignore_conflicts=True,
    )
    # Bumped after commit in its own statement: two dispatchers never wait on these rows.
    session_ids = sorted(sessions.values())
    transaction.on_commit(
        lambda: ChatSession.objects.filter(pk__in=session_ids).update(updated_at=now), robust=True
    )
    zones = _zones({r.user_id for r in reminders if r.pk in late_ids})
    messages = []
    for r in reminders:
        with _written_in(r.language):
            messages.append(
                ChatMessage(
                    id=reminder_message_id(r.pk),
                    session_id=sessions[r.user_id],
                    role=MessageRole.AGENT,
                    agent=agent_tag(),
                    content=_text(r, zones.get(r.user_id) if r.pk in late_ids else None),
                    status=MessageStatus.COMPLETED,
                )
            )
    ChatMessage.objects.bulk_create(messages, ignore_conflicts=True)
    for reminder, message in zip(reminders, messages, strict=True):
        emit_to_user(
            reminder.user_id,
            envelope(
                "reminder.due",
                session_id=message.session_id,
                message_id=message.id,
                data={
                    "reminder_id": reminder.pk,
                    "task_id": reminder.task_id,
                    "content": message.content,
                    "remind_at": reminder.remind_at.isoformat(),
                    "late": reminder.pk in late_ids,
                    "message": message_as_event_data(message),
                },
            ),
        )


def _written_in(language: str) -> translation.override:
    """The reminder's own language for what delivery adds (delivery runs outside any user's
    request or run); English for reminders saved before languages were recorded."""
    return translation.override(language or None)


def _new_session(session_id: uuid.UUID, user_id: int, language: str) -> ChatSession:
    with _written_in(language):
        return ChatSession(id=session_id, user_id=user_id, title=session_title())


def _text(reminder: Reminder, late_zone: ZoneInfo | None) -> str:
    """The message: the reminder's text, with a line saying when it was due if it is late."""
    if late_zone is None:
        return reminder.content
    due = day_short_time(reminder.remind_at.astimezone(late_zone))
    return reminder.content + "\n" + _("(Delivered late: it was due %(due)s.)") % {"due": due}


def _zones(user_ids: Iterable[int]) -> dict[int, ZoneInfo]:
    """Each user's timezone (their chat preference, else the site's)."""
    zones = {uid: ZoneInfo(settings.TIME_ZONE) for uid in user_ids}
    for uid, name in ChatPreference.objects.filter(user_id__in=zones).values_list(
        "user_id", "timezone"
    ):
        with contextlib.suppress(ZoneInfoNotFoundError, ValueError):  # keep the site's
            zones[uid] = ZoneInfo(name) if name else zones[uid]
    return zones


def email_targets(reminders: list[Reminder]) -> dict[int, str]:
    """reminder id -> address, for email-channel reminders whose user has an address, when
    REMINDER_EMAIL_FROM is set (otherwise email is off and chat alone delivers)."""
    wanted = [r for r in reminders if r.channel == Channel.EMAIL]
    if not settings.REMINDER_EMAIL_FROM or not wanted:
        return {}
    addresses = dict(
        get_user_model()
        .objects.filter(pk__in={r.user_id for r in wanted})
        .exclude(email="")
        .values_list("pk", "email")
    )
    return {r.pk: addresses[r.user_id] for r in wanted if r.user_id in addresses}


def email_send(reminder: Reminder, address: str, connection: Any) -> None:
    """Mail one reminder through Django's email backend (raises on failure)."""
    subject = reminder.content.split("\n", 1)[0][:150]
    EmailMessage(
        subject=subject,
        body=reminder.content,
        from_email=settings.REMINDER_EMAIL_FROM,
        to=[address],
        headers={"X-Reminder-Id": str(reminder.pk)},
        connection=connection,
    ).send()
