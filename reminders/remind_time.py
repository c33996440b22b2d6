"""The remind-time rules, computed in code in the user's own timezone (never by the model)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from reminders.dates import SEGMENTS, local_datetime

EVENING_BEFORE = time(20)  # a task on a later day: 20:00 the day before
LEAD_TIME = timedelta(hours=2)  # a task today with a time: two hours before (elapsed time)
MORNING_OF = time(8)  # a task today without a time: 08:00


@dataclass(frozen=True)
class RemindTime:
    """When to remind and which rule chose it, or why no reminder can be set."""

    at: datetime | None
    rule: str = ""
    refusal: str = ""


def remind_at_for(
    *, day: date, start: time | None, segment: str, zone: ZoneInfo, now: datetime
) -> RemindTime:
    """Apply the rules for a task on `day` (its start time, or its segment's start, counts as
    its time): a later day → 20:00 the day before; today with a time → two hours before;
    today without one → 08:00; a task or reminder time already past → refused with the reason."""
    # Arithmetic and comparisons in UTC: Python compares and subtracts datetimes that share a
    # tzinfo by wall clock, which is wrong across a DST change.
    now = now.astimezone(UTC)
    local_now = now.astimezone(zone)
    today = local_now.date()
    if day < today:
        return RemindTime(None, refusal=f"The task was on {day:%A %d %B %Y}; that day has passed.")
    event_time = start or (SEGMENTS[segment][0] if segment else None)
    if day > today:
        at, rule = (
            local_datetime(day - timedelta(days=1), EVENING_BEFORE, zone),
            "20:00 the day before",
        )
    elif event_time is not None:
        begins = local_datetime(day, event_time, zone).astimezone(UTC)
        if begins <= now:
            return RemindTime(
                None, refusal=f"The task's time ({event_time:%H:%M} today) has already passed."
            )
        # Two hours of elapsed time, so a DST change in between does not shorten the notice.
        at, rule = (begins - LEAD_TIME).astimezone(zone), "two hours before"
    else:
        at, rule = local_datetime(day, MORNING_OF, zone), "08:00 on the day"
    if at.astimezone(UTC) <= now:
        return RemindTime(
            None,
            refusal=(
                f"The reminder time ({rule}: {at:%A %H:%M}) has already passed; it is now "
                f"{local_now:%A %H:%M}."
            ),
        )
    return RemindTime(at, rule)
