"""Notifications of findings: held through a person's quiet hours (in their timezone) and past
their daily cap (until the next day), then delivered once: a message in their "Notifications"
chat, a `watch.notification` event (the page's toast, with a mute button), their linked chat
apps and, if they chose, a mail."""

from __future__ import annotations

import uuid
from datetime import datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from agents.tools.builtin import user_timezone
from chat.channels.notices import notices_queue
from chat.events import emit_to_users, envelope
from chat.models import ChatMessage, ChatSession, MessageRole, MessageStatus
from chat.selectors import message_as_event_data
from delegation.models import Run
from reminders import clock
from reminders.watches.findings import Finding
from reminders.watches.models import (
    Notification,
    NotificationSettings,
    NotificationStatus,
    WatchCheck,
)

AGENT_NAME = "watch-service"
_IDS = uuid.UUID("6c1f2e0b-7d4a-4b8e-9f35-1a2b3c4d5e6f")  # namespace of notification ids
HELD_BATCH = 200


def notifications_place(
    *, check: WatchCheck, finding: Finding, recipients: list[Any], now: datetime
) -> list[Notification]:
    """A notification of the finding for each recipient, delivered now or held (quiet hours,
    daily cap) until it may go."""
    placed = []
    for person in recipients:
        note, created = Notification.objects.get_or_create(
            check_row=check,
            user=person,
            defaults={
                "watch": check.watch,
                "staff": person.pk != check.user_id,
                "title": finding.title,
                "detail": finding.detail,
                "severity": finding.severity,
                "status": NotificationStatus.HELD,
                "deliver_at": now,
            },
        )
        if created:
            _deliver_or_hold(note, now)
            placed.append(note)
    return placed


def notifications_deliver_held(*, now: datetime | None = None) -> int:
    """Deliver the held notifications whose time came (each once: rows claimed with SKIP
    LOCKED); one still inside quiet hours or over the cap is held again. How many went."""
    now = now or clock.now()
    with transaction.atomic():
        due = list(
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(status=NotificationStatus.HELD, deliver_at__lte=now)
            .select_related("user", "watch", "user__chat_preference")
            .order_by("deliver_at", "pk")[:HELD_BATCH]
        )
        return sum(_deliver_or_hold(note, now) for note in due)


def held_until(*, user: Any, now: datetime) -> datetime | None:
    """When a notification for `user` may go if not now (quiet hours, then the daily cap), or
    None: now."""
    prefs = NotificationSettings.objects.filter(user=user).first() or NotificationSettings()
    zone = user_timezone(user)
    local = now.astimezone(zone)
    quiet_end = _quiet_end(prefs, local)
    if quiet_end is not None:
        return quiet_end
    day_start = datetime.combine(local.date(), time(0), tzinfo=zone)
    today = Notification.objects.filter(
        user=user, status=NotificationStatus.DELIVERED, delivered_at__gte=day_start
    ).count()
    if today >= prefs.daily_cap:
        tomorrow = datetime.combine(local.date() + timedelta(days=1), time(0), tzinfo=zone)
        return _quiet_end(prefs, tomorrow) or tomorrow
    return None


def _quiet_end(prefs: NotificationSettings, local: datetime) -> datetime | None:
    """The end of the quiet hours `local` falls in (None: not quiet). Hours may span
    midnight (22:00–07:00)."""
    start, end = prefs.quiet_start, prefs.quiet_end
    if start is None or end is None or start == end:
        return None
    at, zone = local.timetz().replace(tzinfo=None), local.tzinfo
    if start < end:
        quiet = start <= at < end
        end_day = local.date()
    else:
        quiet = at >= start or at < end
        end_day = local.date() + timedelta(days=1) if at >= start else local.date()
    if not quiet:
        return None
    return datetime.combine(end_day, end, tzinfo=zone)


def _deliver_or_hold(note: Notification, now: datetime) -> int:
    """Deliver it now, or hold it until it may go; 1 when delivered."""
    later = held_until(user=note.user, now=now)
    if later is not None:
        Notification.objects.filter(pk=note.pk).update(
            status=NotificationStatus.HELD, deliver_at=later
        )
        return 0
    _deliver(note, now)
    return 1


def notifications_session_id(user_id: int) -> uuid.UUID:
    """The id of the user's "Notifications" chat session (the same on every server)."""
    return uuid.uuid5(_IDS, f"session:{user_id}")


def _deliver(note: Notification, now: datetime) -> None:
    """The message, the event after commit, the linked chat apps and the mail; marked delivered."""
    with translation.override(_language(note.user)):
        session_id = notifications_session_id(note.user_id)
        ChatSession.objects.get_or_create(
            id=session_id, defaults={"user": note.user, "title": _("Notifications")}
        )
        text = notification_text(note)
        message, _created = ChatMessage.objects.get_or_create(
            id=uuid.uuid5(_IDS, f"message:{note.pk}"),
            defaults={
                "session_id": session_id,
                "role": MessageRole.AGENT,
                "agent": _agent_tag(),
                "status": MessageStatus.COMPLETED,
                "content": text,
            },
        )
        event = envelope(
            "watch.notification",
            session_id=session_id,
            message_id=message.id,
            data={
                "notification_id": note.pk,
                "watch_id": note.watch_id,
                "watch": note.watch.name,
                "title": note.title,
                "detail": note.detail,
                "severity": note.severity,
                "staff": note.staff,
                "late": note.deliver_at < now - timedelta(seconds=settings.WATCH_LATE_SECONDS),
                "message": message_as_event_data(message),
            },
        )
    emit_to_users([(note.user_id, event)])
    prefs = NotificationSettings.objects.filter(user_id=note.user_id).first()
    if prefs is None or prefs.linked_chats:
        notices_queue([(note.user_id, text, f"watch:{note.pk}")])
    if prefs is not None and prefs.email and settings.REMINDER_EMAIL_FROM and note.user.email:
        mail = EmailMessage(
            subject=note.title[:150],
            body=text,
            from_email=settings.REMINDER_EMAIL_FROM,
            to=[note.user.email],
            headers={"X-Watch-Notification": str(note.pk)},
        )
        transaction.on_commit(mail.send, robust=True)
    Notification.objects.filter(pk=note.pk).update(
        status=NotificationStatus.DELIVERED, delivered_at=now
    )
    ChatSession.objects.filter(pk=session_id).update(updated_at=now)


def notification_text(note: Notification) -> str:
    """The notification as a chat message, in the active language."""
    head = _("%(watch)s: %(title)s") % {"watch": note.watch.name, "title": note.title}
    return f"{head}\n\n{note.detail}".strip()


def _agent_tag() -> dict[str, Any]:
    return {
        "kind": "entry",
        "name": AGENT_NAME,
        "display_name": _("Watches"),
        "depth": 0,
        "path": [AGENT_NAME],
    }


def _language(user: Any) -> str | None:
    """The language of the user's latest turn (what they write in), else the site's."""
    language = (
        Run.objects.filter(user=user, parent__isnull=True)
        .exclude(language="")
        .order_by("-created_at")
        .values_list("language", flat=True)
        .first()
    )
    return language or None
