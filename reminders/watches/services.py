"""Writes of watches: saving a watch (its schedule read from words), a user muting one, and a
user's notification settings."""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from reminders.watches.models import NotificationSettings, Watch, WatchState
from reminders.watches.schedule import cron_of


def watch_save(*, watch: Watch, now: datetime | None = None) -> Watch:
    """Save the watch with the crontab its schedule words say (ValueError with a plain reason
    if they say none). A new or re-enabled watch starts from now: no slot before it is due."""
    watch.cron = cron_of(watch.schedule)
    previous = Watch.objects.filter(pk=watch.pk).values_list("enabled", flat=True).first()
    if watch.enabled and (watch.pk is None or previous is False or watch.last_slot_at is None):
        watch.last_slot_at = now or timezone.now()
    watch.save()
    return watch


@transaction.atomic
def watch_mute(*, watch: Watch, user: Any, muted: bool) -> WatchState:
    """Mute (or unmute) a watch for one user: its findings are recorded, not told."""
    state, _created = WatchState.objects.select_for_update().get_or_create(watch=watch, user=user)
    if state.muted != muted:
        state.muted = muted
        state.save(update_fields=["muted"])
    return state


def notification_settings_of(*, user: Any) -> NotificationSettings:
    """The user's notification settings (the defaults, unsaved, when they set none)."""
    return NotificationSettings.objects.filter(user=user).first() or NotificationSettings(user=user)


def notification_settings_update(
    *,
    user: Any,
    quiet_start: time | None,
    quiet_end: time | None,
    daily_cap: int,
    email: bool,
    linked_chats: bool,
) -> NotificationSettings:
    """Save the user's quiet hours (both or neither), daily cap and where notifications go."""
    if (quiet_start is None) != (quiet_end is None):
        raise ValueError(_("Give both ends of the quiet hours, or neither."))
    settings, _created = NotificationSettings.objects.update_or_create(
        user=user,
        defaults={
            "quiet_start": quiet_start,
            "quiet_end": quiet_end,
            "daily_cap": daily_cap,
            "email": email,
            "linked_chats": linked_chats,
        },
    )
    return settings
