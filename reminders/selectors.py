"""Reads of tasks and reminders, always scoped to one user: lookups, a day's timeline, free time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import QuerySet
from django.utils.translation import gettext as _

from chat.models import ChatMessage, MessageRole
from config.errors import AppError
from reminders.dates import SEGMENTS, describe_window, local_datetime, task_window
from reminders.models import Reminder, ReminderStatus, Task, TaskStatus
from reminders.similarity import normalize, resemblance

FUZZY_MIN = 0.5  # a title this similar (see resemblance) is offered as a candidate
LOOKUP_LIMIT = 500  # pending tasks considered by a title lookup
CANDIDATES_MAX = 10  # similar titles offered at most


def task_as_data(task: Task) -> dict[str, Any]:
    """A task as tools and admin show it."""
    return {
        "id": task.pk,
        "title": task.title,
        "date": task.due_date.isoformat(),
        "weekday": task.due_date.strftime("%A"),
        "start": task.start_time.strftime("%H:%M") if task.start_time else None,
        "end": task.end_time.strftime("%H:%M") if task.end_time else None,
        "segment": task.segment or None,
        "when": describe_window(start=task.start_time, end=task.end_time, segment=task.segment),
        "priority": task.priority,
        "notes": task.notes,
        "status": task.status,
    }


def reminder_as_data(reminder: Reminder, zone: ZoneInfo) -> dict[str, Any]:
    """A reminder as tools show it, with its time in the user's timezone."""
    local = reminder.remind_at.astimezone(zone)
    return {
        "id": reminder.pk,
        "task_id": reminder.task_id,
        "remind_at": local.isoformat(timespec="minutes"),
        "remind_at_local": local.strftime("%A %d %B %Y, %H:%M"),
        "timezone": str(zone),
        "content": reminder.content,
        "channel": reminder.channel,
        "status": reminder.status,
        "late": reminder.late,
    }


def tasks_of(
    *,
    user: Any,
    status: str | None = TaskStatus.PENDING,
    first_day: date | None = None,
    last_day: date | None = None,
    text: str = "",
) -> QuerySet[Task]:
    """The user's tasks, optionally by status, date range and title text, in calendar order."""
    tasks = Task.objects.filter(user=user)
    if status:
        tasks = tasks.filter(status=status)
    if first_day:
        tasks = tasks.filter(due_date__gte=first_day)
    if last_day:
        tasks = tasks.filter(due_date__lte=last_day)
    if text:
        tasks = tasks.filter(title__icontains=text)
    return tasks.order_by("due_date", "start_time", "id")


@dataclass(frozen=True)
class TaskMatches:
    """The pending tasks a reference designates. Only `exact` ones (the id, or the same title
    once folded: case, width, spacing, punctuation, Chinese script) may be acted on; `similar`
    ones (containing or close to the words) are candidates to offer, never to act on."""

    exact: list[Task]
    similar: list[Task]


def task_lookup(*, user: Any, task_id: int | None = None, title: str = "") -> TaskMatches:
    """The user's pending tasks that `task_id` or `title` designates: exact matches, and the
    similar titles (containing or contained in it, or resembling it >= 0.5), closest first,
    at most 10."""
    pending = Task.objects.filter(user=user, status=TaskStatus.PENDING)
    if task_id is not None:
        return TaskMatches(list(pending.filter(pk=task_id)), [])
    query = normalize(title)
    if not query:
        return TaskMatches([], [])
    tasks = list(pending.order_by("due_date", "start_time", "id")[:LOOKUP_LIMIT])
    names = {task.pk: normalize(task.title) for task in tasks}
    exact = [t for t in tasks if names[t.pk] == query]
    scored = []
    for task in tasks:
        if names[task.pk] == query:
            continue
        contains = query in names[task.pk] or names[task.pk] in query
        score = resemblance(query, names[task.pk])
        if contains or score >= FUZZY_MIN:
            scored.append((not contains, -score, task))
    scored.sort(key=lambda entry: entry[:2])
    return TaskMatches(exact, [task for *_key, task in scored[:CANDIDATES_MAX]])


def day_schedule(*, user: Any, day: date, zone: ZoneInfo) -> list[dict[str, Any]]:
    """The day's pending tasks in time order: timed, then segments by their start, then the
    ones for any time of day."""

    def order(task: Task) -> tuple[int, time]:
        if task.start_time:
            return (0, task.start_time)
        if task.segment:
            return (0, SEGMENTS[task.segment][0])
        return (1, time(0))

    tasks = sorted(tasks_of(user=user, first_day=day, last_day=day), key=order)
    return [task_as_data(task) for task in tasks]


def day_free_slots(
    *,
    user: Any,
    day: date,
    zone: ZoneInfo,
    now: datetime,
    window: tuple[time, time],
    min_minutes: int,
    task_minutes: int,
) -> list[tuple[datetime, datetime]]:
    """Gaps of at least `min_minutes` between the day's timed tasks inside `window` (and not
    before now). Tasks with only a day segment or no time do not block time."""
    begin, end = (local_datetime(day, at, zone).astimezone(UTC) for at in window)  # UTC: see Window
    if now > begin:
        begin = min(end, _next_minute(now.astimezone(UTC)))
    busy = []
    for task in tasks_of(user=user, first_day=day, last_day=day).exclude(start_time=None):
        span = task_window(
            day=day,
            start=task.start_time,
            end=task.end_time,
            segment="",
            zone=zone,
            default_minutes=task_minutes,
        )
        busy.append((span.start, span.end))
    slots, cursor = [], begin
    for start, stop in sorted(busy):
        if start - cursor >= timedelta(minutes=min_minutes) and start <= end:
            slots.append((cursor, min(start, end)))
        cursor = max(cursor, stop)
    if end - cursor >= timedelta(minutes=min_minutes):
        slots.append((cursor, end))
    return [(a, b) for a, b in slots if b - a >= timedelta(minutes=min_minutes)]


def _next_minute(moment: datetime) -> datetime:
    whole = moment.replace(second=0, microsecond=0)
    return whole if whole == moment else whole + timedelta(minutes=1)


def reminders_of(*, user: Any, status: str | None = ReminderStatus.PENDING) -> QuerySet[Reminder]:
    """The user's reminders, soonest first (all statuses when `status` is None)."""
    reminders = Reminder.objects.filter(user=user)
    if status:
        reminders = reminders.filter(status=status)
    return reminders.order_by("remind_at", "id")


class NotFound(AppError):
    """A task or reminder that is missing or someone else's (404, code `not_found`)."""

    def __init__(self, message: str) -> None:
        super().__init__("not_found", message, status=404)


def access_task(user: Any, task_id: int) -> Task:
    """The user's own task; another user's id is answered exactly like a missing one."""
    task = Task.objects.filter(pk=task_id, user=user).first()
    if task is None:
        raise NotFound(_("No such task."))
    return task


def access_reminder(user: Any, reminder_id: int) -> Reminder:
    """The user's own reminder; another user's id is answered exactly like a missing one."""
    reminder = Reminder.objects.filter(pk=reminder_id, user=user).first()
    if reminder is None:
        raise NotFound(_("No such reminder."))
    return reminder


# The tools whose saved results name the task or reminder they made (where it came from).
_ORIGIN_TOOLS = ("create_task", "schedule_reminder")
ORIGIN_SCAN_LIMIT = 2000  # the user's latest tool messages of those tools looked at


@dataclass(frozen=True)
class Origins:
    """The chat session each task and reminder was made in, when a saved tool message says."""

    tasks: dict[int, Any]
    reminders: dict[int, Any]


def planner_origins(*, user: Any) -> Origins:
    """Where the user's tasks and reminders came from: the session of the tool message whose
    result created them (the earliest one wins); tasks made in admin have none."""
    messages = (
        ChatMessage.objects.filter(
            session__user=user, role=MessageRole.TOOL, tool__name__in=_ORIGIN_TOOLS
        )
        .order_by("-created_at")
        .values_list("session_id", "tool")[:ORIGIN_SCAN_LIMIT]
    )
    tasks: dict[int, Any] = {}
    reminders: dict[int, Any] = {}
    for session_id, tool in messages:  # newest first: the earliest result is written last
        result = (tool or {}).get("result")
        if not isinstance(result, dict) or result.get("status") != "success":
            continue
        data = result.get("data")
        if not isinstance(data, dict):
            continue
        for key, found in (("task", tasks), ("reminder", reminders)):
            item = data.get(key)
            if isinstance(item, dict) and isinstance(item.get("id"), int):
                found[item["id"]] = session_id
    return Origins(tasks, reminders)
