"""A watch's schedule: words (or a crontab) to crontab fields, shown in words with its next run."""

from __future__ import annotations

from datetime import datetime

from reminders.schedule_words import CronSpec, describe_schedule, parse_schedule
from reminders.slots import next_slot
from reminders.watches.models import Watch

_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def cron_of(words: str) -> str:
    """The crontab expression of schedule words; ValueError with a plain reason if unreadable."""
    spec = parse_schedule(words)
    return " ".join(getattr(spec, name) for name in _FIELDS)


def watch_spec(watch: Watch) -> CronSpec:
    """The watch's crontab fields (read again from its words if none were stored)."""
    cron = watch.cron or cron_of(watch.schedule)
    return CronSpec(**dict(zip(_FIELDS, cron.split(), strict=True)))


def watch_words(watch: Watch) -> str:
    """The schedule in words, in the active language, with its timezone."""
    return describe_schedule(watch_spec(watch), watch.timezone)


def watch_next_run(watch: Watch, now: datetime) -> datetime | None:
    """When the watch next checks (None if disabled or never)."""
    if not watch.enabled:
        return None
    try:
        return next_slot(watch_spec(watch), watch.timezone, now)
    except ValueError:
        return None
