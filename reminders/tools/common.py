"""What the planner tools share: the user's clock, argument reading, task references, schemas."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from agents.registry import ToolContext
from reminders import clock
from reminders.dates import parse_date, parse_time
from reminders.models import Task
from reminders.outcome import Outcome, error, need_confirmation
from reminders.selectors import task_as_data, task_lookup

DATE = {
    "type": "string",
    "maxLength": 40,
    "description": "YYYY-MM-DD, or today / tomorrow / a weekday like saturday / weekend "
    "(also 明天, 周六, 周末); resolved in the user's timezone.",
}
TIME = {"type": "string", "maxLength": 20, "description": "Time of day, HH:MM (24-hour)."}
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
        "description": "Words of the task's title, to find it among pending tasks.",
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


def user_clock(context: ToolContext) -> UserClock:
    """The clock of the user the tool acts for."""
    now = clock.now()
    return UserClock(now, clock.local_now(context.user, now)[1])


def read_date(value: str | None, when: UserClock, default: str = "today") -> date:
    """A date argument resolved against the user's today."""
    try:
        return parse_date(value or default, when.today)
    except ValueError as exc:
        raise BadArgument(str(exc)) from exc


def read_time(value: str | None) -> time | None:
    """A time argument, or None when absent."""
    if value in (None, ""):
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise BadArgument(str(exc)) from exc


def find_task(context: ToolContext, args: dict[str, Any]) -> Task | Outcome:
    """The one pending task `task_id` or `title` designates, else the outcome to return:
    several matches → need_confirmation with candidates, none → error."""
    task_id, title = args.get("task_id"), (args.get("title") or "").strip()
    if task_id is None and not title:
        raise BadArgument("Give the task's task_id or words of its title.")
    found = task_lookup(user=context.user, task_id=task_id, title=title)
    if len(found) == 1:
        return found[0]
    reference = f"#{task_id}" if task_id is not None else f"“{title}”"
    if not found:
        return error(f"No pending task matches {reference}.", candidates=[])
    return need_confirmation(
        f"{len(found)} pending tasks match {reference}; ask which one, then call again with its "
        "task_id.",
        candidates=[task_as_data(task) for task in found[:10]],
    )


def planner_tool(handler: Callable[[ToolContext, dict[str, Any]], Outcome]) -> Callable:
    """Wrap a handler so every answer has the one result shape, bad arguments included."""

    @functools.wraps(handler)
    def run(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return handler(context, args).as_result()
        except BadArgument as exc:
            return error(str(exc)).as_result()

    return run
