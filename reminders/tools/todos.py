"""Task tools: create_task, query_tasks, modify_task, finish_task, remove_task."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, time
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from agents.registry import ToolContext, tool
from config.text import sentences
from reminders.dates import day_long
from reminders.models import Task
from reminders.outcome import Outcome, error, success
from reminders.selectors import task_as_data, tasks_of
from reminders.services.todos import (
    TaskFields,
    task_create,
    task_finish,
    task_remove,
    task_update,
)
from reminders.tools.common import (
    DATE,
    SEGMENT,
    TASK_REF,
    TIME,
    BadArgument,
    UserClock,
    find_task,
    planner_tool,
    read_date,
    read_day,
    read_span,
    user_clock,
)

PRIORITY = {"type": "string", "enum": ["low", "normal", "high"]}
CONFIRM = {
    "type": "boolean",
    "description": "Only after the user confirmed: save despite a past time or a conflict.",
}
QUERY_LIMIT = 50


@tool(
    "create_task",
    "Add a task to the user's planner. Give exact start/end times or a part of the day. A time "
    "already past asks for confirmation; overlaps and near-duplicate titles come back as a "
    "conflict instead of being saved.",
    {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "date": DATE,
            "start": TIME,
            "end": TIME,
            "segment": SEGMENT,
            "priority": PRIORITY,
            "notes": {"type": "string", "maxLength": 2000},
            "confirm": CONFIRM,
        },
        "required": ["title"],
        "additionalProperties": False,
    },
    side_effect=True,
    title=gettext_lazy("Create a task"),
)
@planner_tool
def create_task(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Create a task for the user (date defaults to today)."""
    when = user_clock(context)
    return task_create(
        user=context.user,
        fields=new_task_fields(args, when),
        zone=when.zone,
        now=when.now,
        confirm=bool(args.get("confirm")),
    )


def new_task_fields(args: dict[str, Any], when: UserClock) -> TaskFields:
    """The fields of a new task from a tool's arguments (title, date, start, end, segment…)."""
    start, end = read_span(args.get("start"), args.get("end"))
    return TaskFields(
        title=args["title"],
        day=read_day(args, when),
        start=start,
        end=end,
        segment=args.get("segment", ""),
        priority=args.get("priority", "normal"),
        notes=args.get("notes", ""),
    )


@tool(
    "query_tasks",
    "List the user's tasks: by date or date range, status and title words.",
    {
        "type": "object",
        "properties": {
            "date": DATE,
            "from": DATE,
            "to": DATE,
            "status": {"type": "string", "enum": ["pending", "done", "all"]},
            "text": {"type": "string", "maxLength": 200},
        },
        "additionalProperties": False,
    },
    title=gettext_lazy("Look up tasks"),
)
@planner_tool
def query_tasks(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """The user's matching tasks in calendar order (at most 50)."""
    when = user_clock(context)
    first = last = read_date(args["date"], when) if args.get("date") else None
    if args.get("from"):
        first = read_date(args["from"], when)
    if args.get("to"):
        last = read_date(args["to"], when)
    if first and last and last < first:
        raise BadArgument(_("'to' is before 'from'."))
    status = args.get("status", "pending")
    tasks = tasks_of(
        user=context.user,
        status=None if status == "all" else status,
        first_day=first,
        last_day=last,
        text=(args.get("text") or "").strip(),
    )
    total = tasks.count()
    found = [task_as_data(task) for task in tasks[:QUERY_LIMIT]]
    # The days are said back, so a date read another way than meant shows.
    message = _found_message(total, first, last)
    if total > QUERY_LIMIT:
        message = sentences(message, _("Showing the first %(limit)s.") % {"limit": QUERY_LIMIT})
    return success(message, tasks=found, total=total)


def _found_message(total: int, first: date | None, last: date | None) -> str:
    """How many tasks were found, and on which days, as one sentence."""
    days = {"count": total, "first": first and day_long(first), "last": last and day_long(last)}
    if not total:
        if first is not None and first == last:
            return _("No tasks match on %(first)s.") % days
        if first and last:
            return _("No tasks match from %(first)s to %(last)s.") % days
        if first:
            return _("No tasks match from %(first)s.") % days
        if last:
            return _("No tasks match to %(last)s.") % days
        return _("No tasks match.")
    if first is not None and first == last:
        text = ngettext(
            "%(count)s task found on %(first)s.", "%(count)s tasks found on %(first)s.", total
        )
    elif first and last:
        text = ngettext(
            "%(count)s task found from %(first)s to %(last)s.",
            "%(count)s tasks found from %(first)s to %(last)s.",
            total,
        )
    elif first:
        text = ngettext(
            "%(count)s task found from %(first)s.", "%(count)s tasks found from %(first)s.", total
        )
    elif last:
        text = ngettext(
            "%(count)s task found to %(last)s.", "%(count)s tasks found to %(last)s.", total
        )
    else:
        text = ngettext("%(count)s task found.", "%(count)s tasks found.", total)
    return text % days


@tool(
    "modify_task",
    "Change a pending task found by task_id or title: new title, date, times or part of the "
    "day, priority or notes. Same checks as create_task; its reminder follows a new time.",
    {
        "type": "object",
        "properties": {
            **TASK_REF,
            "new_title": {"type": "string", "minLength": 1, "maxLength": 200},
            "date": DATE,
            "start": TIME,
            "end": TIME,
            "segment": SEGMENT,
            "any_time": {"type": "boolean", "description": "Drop the times and part of day."},
            "priority": PRIORITY,
            "notes": {"type": "string", "maxLength": 2000},
            "confirm": CONFIRM,
        },
        "additionalProperties": False,
    },
    side_effect=True,
    title=gettext_lazy("Change a task"),
)
@planner_tool
def modify_task(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Apply the given changes to the one matching task."""
    found = find_task(context, args)
    if not isinstance(found, Task):
        return found
    when = user_clock(context)
    fields = _changed(found, args, when)
    if fields is None:
        return error(
            _(
                "Nothing to change: give new_title, date, start, end, segment, any_time, "
                "priority or notes."
            )
        )
    return task_update(
        task=found, fields=fields, zone=when.zone, now=when.now, confirm=bool(args.get("confirm"))
    )


def _changed(task: Task, args: dict[str, Any], when: UserClock) -> TaskFields | None:
    """The task's new state, or None when the arguments change nothing."""
    keys = {"new_title", "date", "start", "end", "segment", "any_time", "priority", "notes"}
    if not keys & set(args):
        return None
    fields = TaskFields(
        task.title,
        task.due_date,
        task.start_time,
        task.end_time,
        task.segment,
        task.priority,
        task.notes,
    )
    day = read_day(args, when, default=None)
    if day is not None:
        fields = replace(fields, day=day)
    if args.get("any_time"):
        fields = replace(fields, start=None, end=None, segment="")
    if args.get("segment"):
        fields = replace(fields, start=None, end=None, segment=args["segment"])
    start, end = read_span(args.get("start"), args.get("end"), known_start=fields.start)
    if start is not None:
        fields = replace(fields, start=start, end=_shifted_end(fields, start, args), segment="")
    if end is not None:
        fields = replace(fields, end=end)
    for key, name in (("new_title", "title"), ("priority", "priority"), ("notes", "notes")):
        if key in args:
            fields = replace(fields, **{name: args[key]})
    return fields


def _shifted_end(fields: TaskFields, start: time, args: dict[str, Any]) -> time | None:
    """A moved task keeps its length (if that still ends the same day)."""
    if fields.start is None or fields.end is None or args.get("end"):
        return None
    length = datetime.combine(date.min, fields.end) - datetime.combine(date.min, fields.start)
    moved = datetime.combine(date.min, start) + length
    return moved.time() if moved.date() == date.min else None


@tool(
    "finish_task",
    "Mark a pending task done (found by task_id or title); its pending reminders are cancelled.",
    {"type": "object", "properties": TASK_REF, "additionalProperties": False},
    side_effect=True,
    title=gettext_lazy("Mark a task done"),
)
@planner_tool
def finish_task(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Finish the one matching task."""
    found = find_task(context, args)
    if not isinstance(found, Task):
        return found
    return task_finish(task=found, now=user_clock(context).now)


@tool(
    "remove_task",
    "Delete a pending task (found by task_id or title); its pending reminders are cancelled.",
    {"type": "object", "properties": TASK_REF, "additionalProperties": False},
    side_effect=True,
    title=gettext_lazy("Remove a task"),
)
@planner_tool
def remove_task(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """Remove the one matching task."""
    found = find_task(context, args)
    if not isinstance(found, Task):
        return found
    return task_remove(task=found)
