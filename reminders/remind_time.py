"""When a reminder comes, computed in code in the user's own timezone (never by the model): the
time the user asked for, else the default rules."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from reminders.dates import SEGMENTS, day_long, day_short_time, local_datetime, weekday_time

EVENING_BEFORE = time(20)  # a task on a later day: 20:00 the day before
LEAD_TIME = timedelta(hours=2)  # a task today with a time: two hours before (elapsed time)
MORNING_OF = time(8)  # a task today without a time: 08:00

ASKED = "as asked"  # the rule code of a time the user named for the reminder

# Each rule's name (kept in English as the data code) as it reads in the active language.
RULE_NAMES = {
    "20:00 the day before": gettext_lazy("20:00 the day before"),
    "two hours before": gettext_lazy("two hours before"),
    "08:00 on the day": gettext_lazy("08:00 on the day"),
    ASKED: gettext_lazy("as asked"),
}


@dataclass(frozen=True)
class RemindTime:
    """When to remind and which rule chose it (`rule`: an English code, see rule_name), or
    why no reminder can be set (`refusal`: a sentence in the active language)."""

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
        refusal = _("The task was on %(day)s; that day has passed.") % {"day": day_long(day)}
        return RemindTime(None, refusal=refusal)
    event_time = start or (SEGMENTS[segment][0] if segment else None)
    if day > today:
        at, rule = (
            local_datetime(day - timedelta(days=1), EVENING_BEFORE, zone),
            "20:00 the day before",
        )
    elif event_time is not None:
        begins = local_datetime(day, event_time, zone).astimezone(UTC)
        if begins <= now:
            refusal = _("The task's time (%(time)s today) has already passed.") % {
                "time": f"{event_time:%H:%M}"
            }
            return RemindTime(None, refusal=refusal)
        # Two hours of elapsed time, so a DST change in between does not shorten the notice.
        at, rule = (begins - LEAD_TIME).astimezone(zone), "two hours before"
    else:
        at, rule = local_datetime(day, MORNING_OF, zone), "08:00 on the day"
    if at.astimezone(UTC) <= now:
        return RemindTime(
            None,
            refusal=_("The reminder time (%(rule)s: %(at)s) has already passed; it is now %(now)s.")
            % {"rule": rule_name(rule), "at": weekday_time(at), "now": weekday_time(local_now)},
        )
    return RemindTime(at, rule)


def remind_at_asked(*, day: date, at: time, zone: ZoneInfo, now: datetime) -> RemindTime:
    """The time the user named for the reminder, `at` on `day` in their timezone (the default
    rules do not apply); refused with the reason when it has already passed."""
    moment = local_datetime(day, at, zone)
    if moment.astimezone(UTC) <= now.astimezone(UTC):
        refusal = _("The time asked for (%(at)s) has already passed; it is now %(now)s.") % {
            "at": day_short_time(moment),
            "now": weekday_time(now.astimezone(zone)),
        }
        return RemindTime(None, refusal=refusal)
    return RemindTime(moment, ASKED)


def rule_name(rule: str) -> str:
    """A rule's name in the active language ("two hours before", 提前两小时)."""
    return str(RULE_NAMES.get(rule, rule))
