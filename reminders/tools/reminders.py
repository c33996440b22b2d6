"""Reminder tools: schedule_reminder (at the time the user asked for, else the default rules;
never a time the model picks), list_reminders, cancel_reminder."""

from __future__ import annotations

from datetime import date, time, timedelta
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from agents.registry import ToolContext, tool
from agents.tool_questions import UserQuestion
from config.text import sentences
from reminders import weather
from reminders.dates import day_long, day_short_time, describe_window
from reminders.models import Channel, Reminder, ReminderStatus, Task
from reminders.outcome import Outcome, error, need_confirmation, success
from reminders.selectors import reminder_as_data, reminders_of, task_as_data, task_lookup
from reminders.services.reminders import reminder_cancel, reminder_schedule
from reminders.services.todos import task_create
from reminders.tools.common import (
    DATE,
    SEGMENT,
    TASK_REF,
    TIME,
    BadArgument,
    UserClock,
    find_task,
    list_separator,
    planner_tool,
    read_day,
    read_span,
    user_clock,
    which_task,
)
from reminders.tools.todos import new_task_fields
from reminders.tools.weather import FORECAST_DAYS

LIST_LIMIT = 50
# Arguments that say when a task no one has yet happens: with one, the reminder creates it.
_NEW_TASK_WHEN = ("date", "start", "segment")
# "No … reminders." by the status asked for.
_NONE_OF = {
    "all": gettext_lazy("No reminders."),
    ReminderStatus.PENDING: gettext_lazy("No pending reminders."),
    ReminderStatus.SENT: gettext_lazy("No sent reminders."),
    ReminderStatus.CANCELLED: gettext_lazy("No cancelled reminders."),
    ReminderStatus.FAILED: gettext_lazy("No failed reminders."),
}


@tool(
    "schedule_reminder",
    "Schedule a reminder for a pending task (by task_id or title). With a date (and a time or "
    'part of the day) and no pending task of that title, the task is created first: "remind me '
    'to call Ana tomorrow at 9" needs no create_task. A time the user named for the reminder is '
    "when it comes: pass it as remind_time (with a title, a start also counts: that reminder "
    "comes at 09:00 tomorrow). Only when the user named no time do the default rules choose, in "
    "the user's timezone: a later day → 20:00 the day before; today with a time → two hours "
    "before; today without one → 08:00. A time already past is refused. The result's message "
    "says when it will come: tell the user. Give the city where it happens to add weather "
    "advice (rain, snow, extreme temperatures).",
    {
        "type": "object",
        "properties": {
            **TASK_REF,
            "date": {**DATE, "description": "For a new task: " + DATE["description"]},
            "start": {**TIME, "description": "For a new task: " + TIME["description"]},
            "segment": SEGMENT,
            "remind_time": {
                **TIME,
                "description": "When to remind, if the user named a time for the reminder "
                "(remind me at 9, 下午三点提醒我): " + str(TIME["description"]),
            },
            "remind_date": {
                **DATE,
                "description": "With remind_time, when the reminder is on another day than "
                "the task: " + str(DATE["description"]),
            },
            "city": {"type": "string", "minLength": 1, "maxLength": 100},
            "by_email": {"type": "boolean", "description": "Also send it by email."},
        },
        "additionalProperties": False,
    },
    side_effect=True,
    title=gettext_lazy("Set a reminder"),
)
@planner_tool
def schedule_reminder(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Schedule the task's reminder (with the forecast when a city is given), creating the
    task first when none has the title and a date or time is given (the task and its reminder
    are saved together or not at all); a task of the title at another time is asked about."""
    found = find_task(context, args)
    when = user_clock(context)
    if _nothing_matched(found, args):
        if not _when_given(args):
            ask = _("Give its date (and time) to create it with the reminder.")
            return error(sentences(found.message, ask), **found.data)
        return _new_task_reminded(context, args, when)
    if not isinstance(found, Task):
        return found
    if args.get("task_id") is None and (elsewhen := _elsewhen(found, args, when)):
        return elsewhen
    return _reminder_of(context, found, args, when)


def _elsewhen(task: Task, args: dict[str, Any], when: UserClock) -> Outcome | None:
    """need_confirmation when the task found by its title is on another day or at another time
    than the words say: the user may mean a new task, so nothing is set on a guess."""
    if not _when_given(args):
        return None
    fields = new_task_fields({**args, "title": task.title}, when)
    if fields.day == task.due_date and fields.start in (None, task.start_time):
        return None
    planned = {
        "title": task.title,
        "day": day_long(task.due_date),
        "at": describe_window(start=task.start_time, end=task.end_time, segment=task.segment),
    }
    return need_confirmation(
        _("“%(title)s” is planned for %(day)s, %(at)s, not the time given. Nothing was set yet.")
        % planned,
        ask=which_task(
            _(
                "“%(title)s” is planned for %(day)s, %(at)s. Remind you of that task? (Or say "
                "when the new one is.)"
            )
            % planned,
            [task],
        ),
        reason="other_time",
        candidates=[task_as_data(task)],
    )


def _new_task_reminded(context: ToolContext, args: dict[str, Any], when: UserClock) -> Outcome:
    """Create the task and schedule its reminder in one transaction: neither is kept without
    the other."""
    with transaction.atomic():
        created = task_create(
            user=context.user, fields=new_task_fields(args, when), zone=when.zone, now=when.now
        )
        if created.status != "success":
            return created
        task = Task.objects.get(pk=created.data["task"]["id"])
        outcome = _reminder_of(context, task, args, when)
        if outcome.status != "success":
            transaction.set_rollback(True)
            return outcome
    return success(sentences(created.message, outcome.message), **created.data, **outcome.data)


def _when_given(args: dict[str, Any]) -> bool:
    """The arguments say when the task happens (a date, a time or a part of the day)."""
    return any(args.get(key) for key in _NEW_TASK_WHEN)


def _nothing_matched(found: Task | Outcome, args: dict[str, Any]) -> bool:
    """find_task found no task of the title at all (not a near miss, not an unknown id)."""
    return (
        isinstance(found, Outcome)
        and found.status == "error"
        and args.get("task_id") is None
        and found.data.get("candidates") == []
    )


def _reminder_of(
    context: ToolContext, found: Task, args: dict[str, Any], when: UserClock
) -> Outcome:
    """Schedule `found`'s reminder, with weather advice when a city is given."""
    forecast, note = None, ""
    if args.get("city"):
        try:
            forecast = _forecast(args["city"], found, when)
        except weather.WeatherError as exc:
            if exc.code == "unknown_city":
                message = _("%(problem)s Check the city, or leave it out.") % {"problem": exc}
                return error(message, reason=exc.code)
            note = _("(No weather advice: %(problem)s)") % {"problem": exc}
        if forecast is None and not note:
            note = _("(No weather advice: the day is beyond the forecast range.)")
    outcome = reminder_schedule(
        user=context.user,
        task=found,
        zone=when.zone,
        now=when.now,
        forecast=forecast,
        channel=Channel.EMAIL if args.get("by_email") else Channel.CHAT,
        asked=_asked(found, args, when),
    )
    if note and outcome.status == "success":
        return success(sentences(outcome.message, note), **outcome.data)
    return outcome


def _asked(task: Task, args: dict[str, Any], when: UserClock) -> tuple[date, time] | None:
    """The day and time the user named for the reminder: `remind_time` (on `remind_date`, the
    day its words name (明早), or the task's day); else, for a task named by its title, the
    start said with it ("remind me to call Ana tomorrow at 9": at 09:00, the task's own start,
    as the title lookup checked). None: the user named no time, the default rules choose."""
    if args.get("remind_time"):
        at, _end = read_span(args["remind_time"], None, arguments=("remind_time", "end"))
        said = {"date": args.get("remind_date"), "start": args["remind_time"]}
        day = read_day(said, when, default=None, argument="remind_date") or task.due_date
        return (day, at) if at is not None else None
    if args.get("remind_date"):
        raise BadArgument(_("A reminder day (remind_date) needs its time (remind_time)."))
    if args.get("task_id") is None and args.get("start") and task.start_time is not None:
        return task.due_date, task.start_time
    return None


def _forecast(city: str, task: Task, when: UserClock) -> weather.Forecast | None:
    if not when.today <= task.due_date < when.today + timedelta(days=FORECAST_DAYS):
        return None
    return weather.weather_provider().forecast(city, task.due_date)


@tool(
    "list_reminders",
    "The user's reminders, soonest first (pending unless another status is asked).",
    {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["pending", "sent", "cancelled", "failed", "all"]}
        },
        "additionalProperties": False,
    },
    title=gettext_lazy("Look up reminders"),
)
@planner_tool
def list_reminders(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """List reminders (at most 50)."""
    zone = user_clock(context).zone
    status = args.get("status", ReminderStatus.PENDING)
    reminders = reminders_of(user=context.user, status=None if status == "all" else status)
    found = [reminder_as_data(r, zone) for r in reminders[:LIST_LIMIT]]
    if not found:
        return success(str(_NONE_OF.get(status, _NONE_OF["all"])), reminders=[])
    message = ngettext("%(count)s reminder.", "%(count)s reminders.", len(found))
    return success(message % {"count": len(found)}, reminders=found)


@tool(
    "cancel_reminder",
    "Cancel a pending reminder, by reminder_id or by its task's title. A reminder already sent "
    "cannot be cancelled.",
    {
        "type": "object",
        "properties": {
            "reminder_id": {"type": "integer"},
            "title": TASK_REF["title"],
        },
        "additionalProperties": False,
    },
    side_effect=True,
    title=gettext_lazy("Cancel a reminder"),
)
@planner_tool
def cancel_reminder(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Cancel one reminder (conditional on it still being pending)."""
    zone = user_clock(context).zone
    reminder_id = args.get("reminder_id")
    if reminder_id is None:
        title = (args.get("title") or "").strip()
        if not title:
            raise BadArgument(_("Give the reminder_id or words of its task's title."))
        found = _reminder_by_title(context.user, title, zone)
        if isinstance(found, Outcome):
            return found
        reminder_id = found
    return reminder_cancel(user=context.user, reminder_id=reminder_id, zone=zone)


def _reminder_by_title(user: Any, title: str, zone: Any) -> int | Outcome:
    """The one pending reminder of the task titled `title` (folded), else the outcome: a near
    miss or several reminders are need_confirmation with the candidates, none an error."""
    tasks = task_lookup(user=user, title=title)
    exact = list(reminders_of(user=user).filter(task__in=tasks.exact).select_related("task"))
    if len(exact) == 1:
        return exact[0].pk
    if exact:
        return need_confirmation(
            ngettext(
                "%(count)s pending reminder is for “%(title)s”: %(reminders)s. Nothing was "
                "cancelled yet.",
                "%(count)s pending reminders are for “%(title)s”: %(reminders)s. Nothing was "
                "cancelled yet.",
                len(exact),
            )
            % {"count": len(exact), "title": title, "reminders": _listed(exact, zone)},
            ask=_which_reminder(
                _("Several reminders are for “%(title)s”. Which one should be cancelled?")
                % {"title": title},
                exact,
                zone,
            ),
            reason="several_matches",
            candidates=[_candidate(r, zone) for r in exact[:10]],
        )
    if tasks.exact:
        return error(_("“%(title)s” has no pending reminder.") % {"title": title})
    similar = list(reminders_of(user=user).filter(task__in=tasks.similar).select_related("task"))
    if similar:
        return need_confirmation(
            _(
                "No pending task is titled “%(title)s”. Reminders of similar tasks: "
                "%(reminders)s. Nothing was cancelled yet."
            )
            % {"title": title, "reminders": _listed(similar, zone)},
            ask=_which_reminder(
                _("No task is titled “%(title)s”. Cancel one of these reminders?")
                % {"title": title},
                similar,
                zone,
            ),
            reason="no_exact_match",
            candidates=[_candidate(r, zone) for r in similar[:10]],
        )
    return error(_("No pending reminder for a task titled “%(title)s”.") % {"title": title})


def _listed(reminders: list[Reminder], zone: Any) -> str:
    return list_separator().join(_one(r, zone) for r in reminders[:10])


def _one(reminder: Reminder, zone: Any) -> str:
    """A reminder as the user would recognise it: id, its task's title, when it comes."""
    at = day_short_time(reminder.remind_at.astimezone(zone))
    return _("#%(id)s for “%(title)s” at %(at)s") % {
        "id": reminder.pk,
        "title": reminder.task.title,
        "at": at,
    }


def _which_reminder(question: str, reminders: list[Reminder], zone: Any) -> UserQuestion:
    """A question for the user with one button per reminder (the call runs again with its
    id)."""
    reminders = reminders[:10]
    return UserQuestion(
        question,
        [_one(r, zone) for r in reminders],
        answer_into="reminder_id",
        values=[r.pk for r in reminders],
    )


def _candidate(reminder: Reminder, zone: Any) -> dict[str, Any]:
    return {**reminder_as_data(reminder, zone), "task": reminder.task.title}
