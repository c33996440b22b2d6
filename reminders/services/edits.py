"""Edits from the tasks page: a task's title, day and times together with its reminder time,
in one transaction (nothing is kept when a part is refused)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.db import transaction
from django.utils.translation import gettext as _

from config.text import sentences
from reminders.models import Task, TaskStatus
from reminders.outcome import Outcome, error, success
from reminders.selectors import task_as_data
from reminders.services.reminders import task_reminder_set
from reminders.services.todos import TaskFields, task_update

# The keys of `changes` task_edit reads; any may be missing (then it stays as it is).
EDITABLE = ("title", "date", "start", "end", "notes", "remind_at")


@transaction.atomic
def task_edit(
    *, task: Task, changes: dict[str, Any], zone: ZoneInfo, now: datetime, confirm: bool = False
) -> Outcome:
    """Apply the page's edits: the task's fields with the checks of any change (a clash or a
    past time is need_confirmation/conflict unless `confirm`), then its reminder at the
    wall-clock `remind_at` (None cancels it). A finished task cannot be changed."""
    if task.status != TaskStatus.PENDING:
        return error(_("“%(title)s” is done; it cannot be changed.") % {"title": task.title})
    start = changes.get("start", task.start_time)
    fields = TaskFields(
        title=changes.get("title", task.title),
        day=changes.get("date", task.due_date),
        start=start,
        end=changes.get("end", task.end_time),
        segment="" if start is not None else task.segment,
        priority=task.priority,
        notes=changes.get("notes", task.notes),
    )
    outcome = task_update(task=task, fields=fields, zone=zone, now=now, confirm=confirm)
    if outcome.status != "success":
        return outcome
    message = outcome.message
    if "remind_at" in changes:
        reminded = task_reminder_set(task=task, at=changes["remind_at"], zone=zone, now=now)
        if reminded.status != "success":
            transaction.set_rollback(True)
            return reminded
        message = sentences(message, reminded.message)
    return success(message, task=task_as_data(task))
