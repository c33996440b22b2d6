"""Reads for the tasks page (/tasks/): the user's tasks with their reminders and the chat each
came from, and reminders without a task; grouped upcoming, overdue, then done and cancelled."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from django.urls import reverse

from reminders.dates import SEGMENTS, day_long, describe_window, when_said
from reminders.models import Reminder, ReminderStatus, Task, TaskStatus
from reminders.selectors import Origins, planner_origins

DONE_LIMIT = 100  # finished tasks and past reminders shown (the newest)
OPEN_LIMIT = 500  # pending tasks and reminders shown (the soonest)


def planner_overview(*, user: Any, zone: ZoneInfo, now: datetime) -> dict[str, Any]:
    """Everything the tasks page lists, in the order it lists it: `upcoming` (pending, soonest
    first), `overdue` (pending tasks of past days) and `done` (finished tasks, and reminders
    sent, cancelled or failed without a pending task: newest first)."""
    today = now.astimezone(zone).date()
    origins = planner_origins(user=user)
    pending = list(
        Task.objects.filter(user=user, status=TaskStatus.PENDING).order_by(
            "due_date", "start_time", "id"
        )[:OPEN_LIMIT]
    )
    done = list(
        Task.objects.filter(user=user, status=TaskStatus.DONE).order_by("-completed_at", "-id")[
            :DONE_LIMIT
        ]
    )
    reminders = _reminders_by_task(user, [t.pk for t in pending + done])
    loose = Reminder.objects.filter(user=user, task=None)
    upcoming = [task_row(t, reminders[t.pk], origins, zone, today) for t in pending]
    loose_open = loose.filter(status=ReminderStatus.PENDING).order_by("remind_at")[:OPEN_LIMIT]
    upcoming += [reminder_row(r, origins, zone, today) for r in loose_open]
    upcoming.sort(key=lambda row: row["sort"])
    overdue = [row for row in upcoming if row["group"] == "overdue"]
    finished = [task_row(t, reminders[t.pk], origins, zone, today) for t in done]
    loose_done = loose.exclude(status=ReminderStatus.PENDING).order_by("-remind_at")[:DONE_LIMIT]
    finished += [reminder_row(r, origins, zone, today) for r in loose_done]
    finished.sort(key=lambda row: row["sort"], reverse=True)
    return {
        "timezone": str(zone),
        "today": today.isoformat(),
        "upcoming": [row for row in upcoming if row["group"] == "upcoming"],
        "overdue": overdue,
        "done": finished[:DONE_LIMIT],
    }


def _reminders_by_task(user: Any, task_ids: list[int]) -> dict[int, list[Reminder]]:
    found: dict[int, list[Reminder]] = defaultdict(list)
    for reminder in Reminder.objects.filter(user=user, task_id__in=task_ids).order_by(
        "remind_at", "id"
    ):
        if reminder.task_id is not None:
            found[reminder.task_id].append(reminder)
    return found


def task_row(
    task: Task, reminders: list[Reminder], origins: Origins, zone: ZoneInfo, today: date
) -> dict[str, Any]:
    """A task as the page shows it: its day and time in words, its reminder (the pending one,
    else the latest), and its chat when known."""
    pending = [r for r in reminders if r.status == ReminderStatus.PENDING]
    shown = pending[0] if pending else (reminders[-1] if reminders else None)
    if task.status == TaskStatus.DONE:
        group, sort = "done", (task.completed_at or datetime.min.replace(tzinfo=zone)).isoformat()
    else:
        group = "overdue" if task.due_date < today else "upcoming"
        sort = f"{task.due_date.isoformat()}T{(task.start_time or _segment_start(task)):%H:%M}"
    session_id = origins.tasks.get(task.pk) or (shown and origins.reminders.get(shown.pk))
    return {
        "kind": "task",
        "id": task.pk,
        "title": task.title,
        "date": task.due_date.isoformat(),
        "day": day_long(task.due_date),
        "start": f"{task.start_time:%H:%M}" if task.start_time else None,
        "end": f"{task.end_time:%H:%M}" if task.end_time else None,
        "segment": task.segment or None,
        "when": describe_window(start=task.start_time, end=task.end_time, segment=task.segment),
        "notes": task.notes,
        "status": task.status,
        "group": group,
        "sort": sort,
        "reminder": _reminder_part(shown, zone, today) if shown else None,
        "chat": _chat(session_id),
    }


def reminder_row(
    reminder: Reminder, origins: Origins, zone: ZoneInfo, today: date
) -> dict[str, Any]:
    """A reminder without a task (made in admin) as the page shows it: its first line as the
    title."""
    local = reminder.remind_at.astimezone(zone)
    open_ = reminder.status == ReminderStatus.PENDING
    return {
        "kind": "reminder",
        "id": reminder.pk,
        "title": reminder.content.split("\n", 1)[0],
        "date": local.date().isoformat(),
        "day": day_long(local.date()),
        "status": reminder.status,
        "group": "upcoming" if open_ else "done",
        "sort": local.isoformat(),
        "reminder": _reminder_part(reminder, zone, today),
        "chat": _chat(origins.reminders.get(reminder.pk)),
    }


def _reminder_part(reminder: Reminder, zone: ZoneInfo, today: date) -> dict[str, Any]:
    local = reminder.remind_at.astimezone(zone)
    return {
        "id": reminder.pk,
        "remind_at": local.strftime("%Y-%m-%dT%H:%M"),
        "text": when_said(local, today),
        "status": reminder.status,
        "late": reminder.late,
        "content": reminder.content,
    }


def _chat(session_id: Any) -> dict[str, str] | None:
    if not session_id:
        return None
    return {"session_id": str(session_id), "url": f"{reverse('chat:index')}#{session_id}"}


def _segment_start(task: Task) -> time:
    """Where a task without a start sorts in its day: its segment's start, else last."""
    return SEGMENTS[task.segment][0] if task.segment else time(23, 59)
