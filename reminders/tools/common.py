"""What the planner tools share: the user's clock, argument reading, task references, schemas."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from agents.registry import ToolContext
from agents.tool_questions import UserQuestion
from reminders import clock
from reminders.dates import date_readings, day_long, day_short, describe_window, weekday_iso
from reminders.models import Task
from reminders.outcome import Outcome, error, need_confirmation
from reminders.selectors import task_as_data, task_lookup
from reminders.time_words import Clock, read_clock

DATE = {
    "type": "string",
    "maxLength": 40,
    "description": "YYYY-MM-DD, or today / tomorrow / a weekday like saturday / weekend "
    "(also 明天, 周六, 周末, 下週一); resolved in the user's timezone. When words can mean two "
    "dates (next friday), saving tools ask back.",
}
TIME = {
    "type": "string",
    "maxLength": 20,
    "description": "Time of day, HH:MM (24-hour). Also read: 3pm, 下午3点, 三点半, 明晚8点 "
    "(afternoon and evening words shift the hour); a bare 1–5 o'clock is asked back.",
}
SEGMENT = {
    "type": "string",
    "enum": ["morning", "afternoon", "evening"],
    "description": "Part of the day when there is no exact time: morning 08–12, "
    "afternoon 13–18, evening 18–22.",
}
TASK_REF = {
    "task_id": {"type": "integer", "description": "The task's id, when known."},
    "title": {
        "type": "string",
        "maxLength": 200,
        "description": "The task's title as the user gave it. Only the same title (ignoring "
        "case, width, spacing, punctuation, Traditional/Simplified) acts; otherwise nothing "
        "changes and similar tasks come back as candidates to confirm by task_id.",
    },
}


@dataclass(frozen=True)
class UserClock:
    """Now, as an instant and in the user's own timezone."""

    now: datetime
    zone: ZoneInfo

    @property
    def today(self) -> date:
        """The user's local date."""
        return self.now.astimezone(self.zone).date()


class BadArgument(Exception):
    """An argument the model can correct; becomes an `error` outcome."""


class Unclear(Exception):
    """Words people read in more than one way; becomes `need_confirmation` with the readings,
    so nothing is saved on a guess, and `ask`: the user picks one (a button per reading) and
    the call runs again with it."""

    def __init__(self, message: str, *, ask: UserQuestion | None = None, **data: Any) -> None:
        super().__init__(message)
        self.ask = ask
        self.data = data


def user_clock(context: ToolContext) -> UserClock:
    """The clock of the user the tool acts for."""
    now = clock.now()
    return UserClock(now, clock.local_now(context.user, now)[1])


def read_date(
    value: str | None,
    when: UserClock,
    default: str = "today",
    *,
    strict: bool = False,
    argument: str = "date",
) -> date:
    """A date argument resolved against the user's today; `strict` (tools that save) refuses
    to guess between readings ("next saturday" on a Wednesday) and raises Unclear, whose
    question's answer fills `argument`."""
    try:
        readings = date_readings(value or default, when.today)
    except ValueError as exc:
        raise BadArgument(str(exc)) from exc
    if strict and len(readings) > 1:
        first, second = readings[:2]  # the rules give at most two readings
        raise Unclear(
            _("“%(value)s” could be %(first)s or %(second)s. Nothing was saved yet.")
            % {"value": value, "first": day_long(first), "second": day_long(second)},
            ask=UserQuestion(
                _("Which day do you mean by “%(value)s”?") % {"value": value},
                [day_long(day) for day in readings],
                answer_into=argument,
                values=[day.isoformat() for day in readings],
            ),
            reason="ambiguous_date",
            dates=[day.isoformat() for day in readings],
        )
    return readings[0]


def read_time(value: str | None) -> time | None:
    """A time argument (for reading, not saving: a bare 3点 is 03:00), or None when absent."""
    return _at(_clock_of(value))


def read_span(
    start: str | None,
    end: str | None,
    *,
    known_start: time | None = None,
    arguments: tuple[str, str] = ("start", "end"),
) -> tuple[time | None, time | None]:
    """Start and end arguments of a task that is saved: a bare small hour is settled by the
    other end when only one reading fits (下午3点 to 5点 ends 17:00), else raises Unclear
    (the user's pick fills the argument of `arguments`, the start's and the end's names)."""
    first, last = _clock_of(start), _clock_of(end)
    clear_end = last.at if last is not None and not last.vague else None
    start_at = _settled(start, first, arguments[0], before=clear_end)
    end_at = _settled(end, last, arguments[1], after=start_at or known_start)
    return start_at, end_at


def _clock_of(value: str | None) -> Clock | None:
    if value in (None, ""):
        return None
    try:
        return read_clock(value)
    except ValueError as exc:
        raise BadArgument(str(exc)) from exc


def _at(reading: Clock | None) -> time | None:
    return None if reading is None else reading.at


def _settled(
    value: str | None,
    reading: Clock | None,
    argument: str,
    *,
    after: time | None = None,
    before: time | None = None,
) -> time | None:
    """The reading's time; for a vague one, the one of its two readings that fits between
    `after` and `before`, else Unclear."""
    if reading is None or not reading.vague:
        return _at(reading)
    readings = [reading.at, reading.at.replace(hour=reading.at.hour + 12)]
    fitting = [
        at for at in readings if (after is None or at > after) and (before is None or at < before)
    ]
    if len(fitting) == 1 and (after is not None or before is not None):
        return fitting[0]
    times = [f"{at:%H:%M}" for at in readings]
    raise Unclear(
        _("“%(value)s” could be %(first)s or %(second)s. Nothing was saved yet.")
        % {"value": value, "first": times[0], "second": times[1]},
        ask=UserQuestion(
            _("Which time do you mean by “%(value)s”?") % {"value": value},
            times,
            answer_into=argument,
            values=times,
        ),
        reason="ambiguous_time",
        times=times,
    )


def read_day(
    args: dict[str, Any],
    when: UserClock,
    default: str | None = "today",
    *,
    argument: str = "date",
) -> date | None:
    """A saved task's date: the `date` argument, else the day its start names (明晚8点 is
    tomorrow), else `default`. A date and a start naming different days is an error.
    `argument`: the name the call gave the date by (the user's pick of a reading fills it)."""
    implied = _day_of_start(args.get("start"), when)
    if not args.get("date"):
        return implied or (read_date(default, when) if default else None)
    day = read_date(args["date"], when, strict=True, argument=argument)
    if implied is not None and implied != day:
        raise BadArgument(
            _(
                "The date “%(date)s” (%(day)s) and the start “%(start)s” (%(start_day)s) name "
                "different days; give one date."
            )
            % {
                "date": args["date"],
                "day": day_short(day),
                "start": args["start"],
                "start_day": day_short(implied),
            }
        )
    return day


def _day_of_start(start: str | None, when: UserClock) -> date | None:
    try:
        offset = read_clock(start).day if start else None
    except ValueError:
        return None  # read_span reports it
    return None if offset is None else when.today + timedelta(days=offset)


def find_task(context: ToolContext, args: dict[str, Any]) -> Task | Outcome:
    """The one pending task `task_id` or `title` designates, else the outcome to return. Only
    the id or the same title (folded: case, width, spacing, punctuation, Chinese script) acts;
    a near miss ("call dad" for "Call mom") is need_confirmation with the candidates, several
    tasks of that title too, and none at all is an error."""
    task_id, title = args.get("task_id"), (args.get("title") or "").strip()
    if task_id is None and not title:
        raise BadArgument(_("Give the task's task_id or words of its title."))
    found = task_lookup(user=context.user, task_id=task_id, title=title)
    if len(found.exact) == 1:
        return found.exact[0]
    if task_id is not None:
        return error(_("You have no pending task #%(id)s.") % {"id": task_id}, candidates=[])
    if found.exact:
        count = len(found.exact)
        said = ngettext(
            "%(count)s pending task is titled “%(title)s”: %(tasks)s. Nothing was changed yet.",
            "%(count)s pending tasks are titled “%(title)s”: %(tasks)s. Nothing was changed yet.",
            count,
        ) % {"count": count, "title": title, "tasks": _listed(found.exact)}
        return need_confirmation(
            said,
            ask=which_task(
                _("Several tasks are titled “%(title)s”. Which one?") % {"title": title},
                found.exact,
            ),
            reason="several_matches",
            candidates=[task_as_data(task) for task in found.exact[:10]],
        )
    if found.similar:
        return need_confirmation(
            _("No pending task is titled “%(title)s”. Similar: %(tasks)s. Nothing was changed yet.")
            % {"title": title, "tasks": _listed(found.similar)},
            ask=which_task(
                _("No task is titled “%(title)s”. Did you mean one of these?") % {"title": title},
                found.similar,
            ),
            reason="no_exact_match",
            candidates=[task_as_data(task) for task in found.similar],
        )
    return error(_("No pending task matches “%(title)s”.") % {"title": title}, candidates=[])


def which_task(question: str, tasks: list[Task]) -> UserQuestion:
    """A question for the user with one button per task (the call runs again with its id)."""
    tasks = tasks[:10]
    return UserQuestion(
        question,
        [_listed([task]) for task in tasks],
        answer_into="task_id",
        values=[task.pk for task in tasks],
    )


def _listed(tasks: list[Task]) -> str:
    """Tasks as the user would recognise them: id, title, day and time."""
    return list_separator().join(
        _("#%(id)s “%(title)s” (%(day)s, %(when)s)")
        % {
            "id": task.pk,
            "title": task.title,
            "day": weekday_iso(task.due_date),
            "when": describe_window(start=task.start_time, end=task.end_time, segment=task.segment),
        }
        for task in tasks[:10]
    )


def list_separator() -> str:
    """What stands between listed items ("a; b") in the active language."""
    return pgettext("list separator", "; ")


def planner_tool(handler: Callable[[ToolContext, dict[str, Any]], Outcome]) -> Callable:
    """Wrap a handler so every answer has the one result shape, bad arguments included."""

    @functools.wraps(handler)
    def run(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return handler(context, args).as_result()
        except BadArgument as exc:
            return error(str(exc)).as_result()
        except Unclear as exc:
            return need_confirmation(str(exc), ask=exc.ask, **exc.data).as_result()

    return run
