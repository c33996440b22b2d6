"""When a crontab schedule comes due in its time zone: the next slot, the last one, and a slot's
key (its wall-clock time there, so a slot is one slot however often it is computed)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter  # type: ignore[import-untyped]
from django.conf import settings

from reminders.schedule_words import CronSpec


def next_slot(spec: CronSpec, zone: str, after: datetime) -> datetime:
    """The first time strictly after `after` that the schedule comes due, aware in `zone`.
    A wall-clock time that a DST change skips comes due at the first minute after the gap; one
    that it repeats comes due once (at its first occurrence). ValueError if it never does
    (e.g. 30 February)."""
    runs = croniter(_expression(spec), after.astimezone(_zone(zone)), day_or=False)
    while True:
        try:
            slot = runs.get_next(datetime)
        except CroniterBadDateError as exc:
            raise ValueError(f"“{_expression(spec)}” never comes due.") from exc
        if not _repeated(slot):
            return slot


def last_slot(spec: CronSpec, zone: str, at: datetime) -> datetime | None:
    """The latest time at or before `at` that the schedule came due (None if it never did in
    the past year), aware in `zone`."""
    start = at.astimezone(_zone(zone)) + timedelta(seconds=1)
    runs = croniter(_expression(spec), start, day_or=False)
    year_ago = start - timedelta(days=366)
    try:
        while (slot := runs.get_prev(datetime)) > year_ago:
            if not _repeated(slot):
                return slot
    except CroniterBadDateError:
        pass
    return None


def slot_key(slot: datetime) -> str:
    """The slot's wall-clock minute in its own zone ("2026-11-30T09:00"): what makes a run of a
    slot the same run when beat fires it twice or a catch-up computes it again."""
    return f"{slot:%Y-%m-%dT%H:%M}"


def _expression(spec: CronSpec) -> str:
    return " ".join(
        [spec.minute, spec.hour, spec.day_of_month, spec.month_of_year, spec.day_of_week]
    )


def _zone(zone: str) -> ZoneInfo:
    return ZoneInfo(zone or settings.TIME_ZONE)


def _repeated(slot: datetime) -> bool:
    """The second pass through a wall-clock time that falling back repeats."""
    return bool(slot.fold) and slot.replace(fold=0).utcoffset() != slot.utcoffset()
