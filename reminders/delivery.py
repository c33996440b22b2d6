"""Delivering due reminders: a message in the user's "Reminders" chat session, a `reminder.due`
event to every open socket of the user (after commit), an email when configured, and a message
to their linked LINE or Slack accounts."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from chat.channels.notices import notices_queue
from chat.events import emit_to_users, envelope
from chat.models import ChatMessage, ChatPreference, ChatSession, MessageRole, MessageStatus
from chat.selectors import message_as_event_data
from config.db import AnyOf
from reminders.dates import day_short_time
from reminders.messages import ReminderMessage, messages_insert
from reminders.models import Channel

# Reminder messages are shown as coming from "Reminders": the dispatcher, not an agent (no run).
AGENT_NAME = "reminder-service"
_IDS = uuid.UUID("0d7c1f7e-8a57-4a52-b1a4-2f3c61e0a8d4")  # namespace of derived ids
BUMP_SECONDS = 1.0  # a Reminders session is moved up the user's list at most this often


@dataclass(frozen=True, slots=True)
class Due:
    """A claimed reminder, as delivery reads it (plain values: a batch builds no model rows)."""

    id: int
    user_id: int
    task_id: int | None
    remind_at: datetime
    due_at: datetime
    content: str
    language: str
    channel: str
    attempts: int


# The Reminder columns a claim reads, in the order of Due's fields.
DUE_FIELDS = (
    "id",
    "user_id",
    "task_id",
    "remind_at",
    "due_at",
    "content",
    "language",
    "channel",
    "attempts",
)


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


def deliver_to_chat(reminders: list[Due], *, now: datetime, late_ids: set[int]) -> None:
    """Write each reminder into its user's Reminders session (inside the caller's transaction,
    so the message exists exactly when the reminder is marked sent) and emit `reminder.due` to
    the user's sockets once that transaction commits; the same text goes to the LINE or Slack
    accounts they linked for reminders (queued after commit, each sent once)."""
    if not reminders:
        return
    sessions = _sessions(reminders)
    late_texts = _late_texts([r for r in reminders if r.id in late_ids])
    messages = [
        ReminderMessage(
            id=reminder_message_id(r.id),
            session_id=sessions[r.user_id],
            content=late_texts.get(r.id, r.content),
            created_at=timezone.now(),  # one by one: the session lists them in due order
            language=r.language,
        )
        for r in reminders
    ]
    shared = {language: _shared(language, now) for language in {r.language for r in reminders}}
    messages_insert(messages, shared)
    session_ids = list(sessions.values())
    transaction.on_commit(lambda: _bump(session_ids, now), robust=True)
    as_data = {language: message_as_event_data(row) for language, row in shared.items()}
    emit_to_users(
        (r.user_id, _event(r, m, as_data[m.language], late=r.id in late_ids))
        for r, m in zip(reminders, messages, strict=True)
    )
    notices_queue(
        (r.user_id, m.content, f"reminder:{r.id}") for r, m in zip(reminders, messages, strict=True)
    )


def _shared(language: str, now: datetime) -> ChatMessage:
    """What the batch's messages in `language` share, as an unsaved message (its own columns
    are placeholders): from "Reminders", completed, no run."""
    with _written_in(language):
        return ChatMessage(
            role=MessageRole.AGENT,
            agent=agent_tag(),
            status=MessageStatus.COMPLETED,
            created_at=now,
            updated_at=now,
        )


def _event(reminder: Due, message: ReminderMessage, shared: dict[str, Any], *, late: bool) -> dict:
    """The `reminder.due` event of one delivered reminder."""
    at = message.created_at.isoformat()
    own = {"id": str(message.id), "content": message.content, "created_at": at, "updated_at": at}
    return envelope(
        "reminder.due",
        session_id=message.session_id,
        message_id=message.id,
        data={
            "reminder_id": reminder.id,
            "task_id": reminder.task_id,
            "content": message.content,
            "remind_at": reminder.remind_at.isoformat(),
            "late": late,
            "message": shared | own,  # as message_as_event_data shows the stored message
        },
    )


def _sessions(reminders: list[Due]) -> dict[int, uuid.UUID]:
    """user id -> that user's Reminders session id, creating the sessions that do not exist."""
    languages = {r.user_id: r.language for r in reversed(reminders)}  # each user's first
    sessions = {user_id: reminder_session_id(user_id) for user_id in languages}
    existing = set(
        ChatSession.objects.filter(AnyOf(F("pk"), list(sessions.values()))).values_list(
            "pk", flat=True
        )
    )
    ChatSession.objects.bulk_create(
        [
            _new_session(sid, uid, languages[uid])
            for sid, uid in sorted(
                (sid, uid) for uid, sid in sessions.items() if sid not in existing
            )
        ],
        # Another dispatcher may insert the same new session meanwhile: the same (sorted) order
        # everywhere means one waits for the other instead of a deadlock.
        ignore_conflicts=True,
    )
    return sessions


def _bump(session_ids: list[uuid.UUID], now: datetime) -> None:
    """Put the sessions first in their users' lists, after commit in a statement of its own (two
    dispatchers never wait on these rows). One bumped less than BUMP_SECONDS ago stays as it
    is: at thousands of reminders a second a session was bumped on every batch, a sixth of the
    dispatcher's database time, for an order no one can tell apart."""
    recent = now - timedelta(seconds=BUMP_SECONDS)
    ChatSession.objects.filter(AnyOf(F("pk"), session_ids), updated_at__lt=recent).update(
        updated_at=now
    )


def _written_in(language: str) -> translation.override:
    """The reminder's own language for what delivery adds (delivery runs outside any user's
    request or run); English for reminders saved before languages were recorded."""
    return translation.override(language or None)


def _new_session(session_id: uuid.UUID, user_id: int, language: str) -> ChatSession:
    with _written_in(language):
        return ChatSession(id=session_id, user_id=user_id, title=session_title())


def _late_texts(late: list[Due]) -> dict[int, str]:
    """reminder id -> the message of each late reminder: its text, and a line saying when it
    was due in its language and its user's timezone. A downtime's backlog is late by the
    thousand, mostly due on the same minutes: each different line is written once."""
    zones = _zones({r.user_id for r in late})
    texts = {}
    for language in {r.language for r in late}:
        lines: dict[tuple[ZoneInfo, datetime], str] = {}
        with _written_in(language):
            for reminder in (r for r in late if r.language == language):
                zone = zones[reminder.user_id]
                # The line names the minute: the same minute, the same line.
                minute = reminder.remind_at.astimezone(zone).replace(second=0, microsecond=0)
                line = lines.get((zone, minute))
                if line is None:
                    due = day_short_time(minute)
                    line = lines[zone, minute] = _("(Delivered late: it was due %(due)s.)") % {
                        "due": due
                    }
                texts[reminder.id] = reminder.content + "\n" + line
    return texts


def _zones(user_ids: Iterable[int]) -> dict[int, ZoneInfo]:
    """Each user's timezone (their chat preference, else the site's)."""
    zones = {uid: ZoneInfo(settings.TIME_ZONE) for uid in user_ids}
    if not zones:
        return zones
    for uid, name in ChatPreference.objects.filter(user_id__in=zones).values_list(
        "user_id", "timezone"
    ):
        with contextlib.suppress(ZoneInfoNotFoundError, ValueError):  # keep the site's
            zones[uid] = ZoneInfo(name) if name else zones[uid]
    return zones


def email_targets(reminders: list[Due]) -> dict[int, str]:
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
    return {r.id: addresses[r.user_id] for r in wanted if r.user_id in addresses}


def email_send(reminder: Due, address: str, mailer: Any) -> None:
    """Mail one reminder through a connection of Django's email backend (raises on failure)."""
    subject = reminder.content.split("\n", 1)[0][:150]
    EmailMessage(
        subject=subject,
        body=reminder.content,
        from_email=settings.REMINDER_EMAIL_FROM,
        to=[address],
        headers={"X-Reminder-Id": str(reminder.id)},
        connection=mailer,
    ).send()
