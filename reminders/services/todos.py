"""Writes of tasks: create, change, finish and remove, with time checks and conflict reports."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from config.text import sentences
from reminders.dates import (
    SEGMENTS,
    Window,
    day_long,
    day_short,
    describe_window,
    local_datetime,
    segment_name,
    task_window,
)
from reminders.models import Priority, Task, TaskStatus
from reminders.outcome import Outcome, conflict, error, need_confirmation, save_anyway, success
from reminders.selectors import task_as_data
from reminders.services.reminders import reminders_cancel_for_task, reminders_follow_task
from reminders.similarity import dice

DUPLICATE_MIN = 0.75  # bigram Dice at or above this: a near-duplicate title


@dataclass(frozen=True)
class TaskFields:
    """A task's editable state, already parsed (dates and times in the user's timezone)."""

    title: str
    day: date
    start: time | None = None
    end: time | None = None
    segment: str = ""
    priority: str = Priority.NORMAL
    notes: str = ""

    def normalized(self) -> TaskFields:
        """Exact times win over a segment; titles and notes trimmed."""
        segment = "" if self.start is not None else self.segment
        return replace(self, title=self.title.strip(), notes=self.notes.strip(), segment=segment)


def task_create(
    *, user: Any, fields: TaskFields, zone: ZoneInfo, now: datetime, confirm: bool = False
) -> Outcome:
    """Create a task unless its time is invalid (error), already past (need_confirmation) or it
    overlaps or nearly duplicates a pending task that day (conflict); `confirm` overrides the
    last two once the user has agreed."""
    fields = fields.normalized()
    problem = _invalid(fields)
    if problem:
        return error(problem)
    if not confirm:
        stop = _check(user=user, fields=fields, zone=zone, now=now, exclude=None)
        if stop is not None:
            return stop
    task = Task.objects.create(
        user=user,
        title=fields.title,
        due_date=fields.day,
        start_time=fields.start,
        end_time=fields.end,
        segment=fields.segment,
        priority=fields.priority,
        notes=fields.notes,
    )
    when = describe_window(start=task.start_time, end=task.end_time, segment=task.segment)
    return success(
        _("Created “%(title)s” on %(day)s, %(when)s.")
        % {"title": task.title, "day": day_long(task.due_date), "when": when},
        task=task_as_data(task),
    )


@transaction.atomic
def task_update(
    *, task: Task, fields: TaskFields, zone: ZoneInfo, now: datetime, confirm: bool = False
) -> Outcome:
    """Change a task with the same checks as creating it (run only for what changed); its
    pending reminders follow a new date or time."""
    fields = fields.normalized()
    problem = _invalid(fields)
    if problem:
        return error(problem)
    before = _fields_of(task)
    moved = (fields.day, fields.start, fields.end, fields.segment) != (
        before.day,
        before.start,
        before.end,
        before.segment,
    )
    if not confirm and (moved or fields.title != before.title):
        stop = _check(
            user=task.user, fields=fields, zone=zone, now=now, exclude=task.pk, past=moved
        )
        if stop is not None:
            return stop
    task.title, task.due_date, task.priority, task.notes = (
        fields.title,
        fields.day,
        fields.priority,
        fields.notes,
    )
    task.start_time, task.end_time, task.segment = fields.start, fields.end, fields.segment
    task.save()
    message = _("Updated “%(title)s”.") % {"title": task.title}
    note = reminders_follow_task(task=task, zone=zone, now=now) if moved else ""
    return success(sentences(message, note), task=task_as_data(task))


@transaction.atomic
def task_finish(*, task: Task, now: datetime) -> Outcome:
    """Mark a pending task done; its pending reminders are cancelled."""
    task.status, task.completed_at = TaskStatus.DONE, now
    task.save(update_fields=["status", "completed_at", "updated_at"])
    cancelled = reminders_cancel_for_task(task=task)
    message = _("Marked “%(title)s” done.") % {"title": task.title}
    return success(_with_cancelled(message, cancelled), task=task_as_data(task))


@transaction.atomic
def task_remove(*, task: Task) -> Outcome:
    """Delete a task; its pending reminders are cancelled first (sent ones stay as records)."""
    cancelled = reminders_cancel_for_task(task=task)
    data = task_as_data(task)
    task.delete()
    message = _("Removed “%(title)s”.") % {"title": data["title"]}
    return success(_with_cancelled(message, cancelled), task=data)


def _with_cancelled(message: str, cancelled: int) -> str:
    """The message, and how many pending reminders went with the task."""
    if not cancelled:
        return message
    extra = ngettext(
        "Cancelled %(count)s pending reminder.", "Cancelled %(count)s pending reminders.", cancelled
    )
    return sentences(message, extra % {"count": cancelled})


def _fields_of(task: Task) -> TaskFields:
    return TaskFields(
        task.title,
        task.due_date,
        task.start_time,
        task.end_time,
        task.segment,
        task.priority,
        task.notes,
    )


def _invalid(fields: TaskFields) -> str:
    if not fields.title:
        return _("The task needs a title.")
    if fields.end is not None and fields.start is None:
        return _("An end time needs a start time.")
    if fields.start is not None and fields.end is not None and fields.end <= fields.start:
        return _("The end time must be after the start time (tasks cannot cross midnight).")
    if fields.segment and fields.segment not in SEGMENTS:
        return _("Unknown part of the day %(segment)s; use morning, afternoon or evening.") % {
            "segment": repr(fields.segment)
        }
    return ""


def _check(
    *,
    user: Any,
    fields: TaskFields,
    zone: ZoneInfo,
    now: datetime,
    exclude: int | None,
    past: bool = True,
) -> Outcome | None:
    """need_confirmation for a past time, conflict for clashes, None when all is well."""
    reason = _past_reason(fields, zone, now) if past else ""
    if reason:
        return need_confirmation(
            sentences(reason, _("Not saved yet.")), ask=save_anyway(reason), reason="past"
        )
    window = _window(fields, zone)
    same_day = Task.objects.filter(user=user, status=TaskStatus.PENDING, due_date=fields.day)
    if exclude is not None:
        same_day = same_day.exclude(pk=exclude)
    duplicates, overlaps = [], []
    for other in same_day:
        if dice(fields.title, other.title) >= DUPLICATE_MIN:
            duplicates.append(task_as_data(other))
        other_window = _window(_fields_of(other), zone)
        if _clash(window, other_window):
            overlaps.append(task_as_data(other))
    if not duplicates and not overlaps:
        return None
    reason = _clash_reason(overlaps, duplicates)
    return conflict(reason, ask=save_anyway(reason), overlaps=overlaps, duplicates=duplicates)


def _clash_reason(overlaps: list[dict[str, Any]], duplicates: list[dict[str, Any]]) -> str:
    """Why a task was not saved, as one sentence."""
    names = {"overlaps": _names(overlaps), "duplicates": _names(duplicates)}
    if overlaps and duplicates:
        return (
            _("Not saved: it overlaps %(overlaps)s and looks like %(duplicates)s already that day.")
            % names
        )
    if overlaps:
        return _("Not saved: it overlaps %(overlaps)s.") % names
    return _("Not saved: it looks like %(duplicates)s already that day.") % names


def _clash(a: Window | None, b: Window | None) -> bool:
    """Only exact times clash; a day segment is too vague to block anything."""
    return a is not None and b is not None and a.exact and b.exact and a.overlaps(b)


def _window(fields: TaskFields, zone: ZoneInfo) -> Window | None:
    return task_window(
        day=fields.day,
        start=fields.start,
        end=fields.end,
        segment=fields.segment,
        zone=zone,
        default_minutes=settings.REMINDER_TASK_MINUTES,
    )


def _past_reason(fields: TaskFields, zone: ZoneInfo, now: datetime) -> str:
    local_now = now.astimezone(zone)
    today = local_now.date()
    values = {"now": f"{local_now:%H:%M}"}
    if fields.day < today:
        values |= {"day": day_long(fields.day), "today": day_short(today)}
        return _("%(day)s is in the past (today is %(today)s).") % values
    if fields.day > today:
        return ""
    if fields.start is not None and local_datetime(today, fields.start, zone) <= now:
        values["time"] = f"{fields.start:%H:%M}"
        return _("%(time)s today has already passed (it is %(now)s now).") % values
    if fields.segment and local_datetime(today, SEGMENTS[fields.segment][1], zone) <= now:
        values["segment"] = segment_name(fields.segment)
        return _("This %(segment)s is already over (it is %(now)s now).") % values
    return ""


def _names(tasks: list[dict[str, Any]]) -> str:
    separator = pgettext("list of names separator", ", ")
    return separator.join(_("“%(title)s” (%(when)s)") % task for task in tasks)
