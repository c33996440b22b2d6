"""Calendar tools: get_day_schedule (a day's timeline) and find_free_slots."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext

from agents.registry import ToolContext, tool
from reminders.dates import day_long
from reminders.outcome import Outcome, error, success
from reminders.selectors import day_free_slots, day_schedule, reminder_as_data, reminders_of
from reminders.tools.common import (
    DATE,
    TIME,
    list_separator,
    planner_tool,
    read_date,
    read_time,
    user_clock,
)


@tool(
    "get_day_schedule",
    "The user's pending tasks on one day in time order (timed ones, parts of the day, then "
    "any-time tasks), with that day's pending reminders.",
    {"type": "object", "properties": {"date": DATE}, "additionalProperties": False},
    title=gettext_lazy("Look at the day's schedule"),
)
@planner_tool
def get_day_schedule(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """A day's timeline."""
    when = user_clock(context)
    day = read_date(args.get("date"), when)
    items = day_schedule(user=context.user, day=day, zone=when.zone)
    reminders = [
        reminder_as_data(r, when.zone)
        for r in reminders_of(user=context.user)
        if r.remind_at.astimezone(when.zone).date() == day
    ]
    if not items:
        message = _("Nothing planned on %(day)s.") % {"day": day_long(day)}
    else:
        listed = list_separator().join(
            pgettext("a task in a day's schedule", "%(when)s %(title)s") % item for item in items
        )
        message = _("%(day)s: %(tasks)s.") % {"day": day_long(day), "tasks": listed}
    return success(
        message, date=day.isoformat(), timezone=str(when.zone), items=items, reminders=reminders
    )


@tool(
    "find_free_slots",
    "Free time on one day between the user's timed tasks, inside working hours "
    "(default 09:00–18:00; today starts from now).",
    {
        "type": "object",
        "properties": {
            "date": DATE,
            "day_start": TIME,
            "day_end": TIME,
            "min_minutes": {"type": "integer", "minimum": 5, "maximum": 720},
        },
        "additionalProperties": False,
    },
    title=gettext_lazy("Find free time"),
)
@planner_tool
def find_free_slots(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Gaps of at least `min_minutes` (default 30)."""
    when = user_clock(context)
    day = read_date(args.get("date"), when)
    first = read_time(args.get("day_start") or settings.REMINDER_DAY_START)
    last = read_time(args.get("day_end") or settings.REMINDER_DAY_END)
    if last <= first:
        return error(_("day_end must be after day_start."))
    if day < when.today:
        return error(_("%(day)s is in the past.") % {"day": day_long(day)})
    minutes = args.get("min_minutes", 30)
    slots = day_free_slots(
        user=context.user,
        day=day,
        zone=when.zone,
        now=when.now,
        window=(first, last),
        min_minutes=minutes,
        task_minutes=settings.REMINDER_TASK_MINUTES,
    )
    values = {"start": f"{first:%H:%M}", "end": f"{last:%H:%M}", "day": day_long(day)}
    data = [
        {
            "start": f"{a.astimezone(when.zone):%H:%M}",
            "end": f"{b.astimezone(when.zone):%H:%M}",
            "minutes": int((b - a).total_seconds() // 60),
        }
        for a, b in slots
    ]
    if not data and day == when.today and when.now.astimezone(when.zone).time() >= last:
        return success(
            _("The hours until %(end)s today are over.") % values, date=day.isoformat(), slots=[]
        )
    if not data:
        message = _(
            "No free time of %(minutes)s minutes or more between %(start)s and %(end)s on "
            "%(day)s: the day is full."
        )
        return success(message % {**values, "minutes": minutes}, date=day.isoformat(), slots=[])
    values["slots"] = pgettext("list of names separator", ", ").join(
        f"{s['start']}–{s['end']}" for s in data
    )
    message = _("Free between %(start)s and %(end)s on %(day)s: %(slots)s.") % values
    return success(message, date=day.isoformat(), slots=data)
