"""Writes of reminders: schedule by the rules, cancel safely against dispatch, follow a task."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction

from reminders.dates import describe_window
from reminders.models import Channel, Reminder, ReminderStatus, Task
from reminders.outcome import Outcome, conflict, error, success
from reminders.remind_time import remind_at_for
from reminders.selectors import reminder_as_data
from reminders.weather import Forecast, weather_advice


def reminder_content(*, task: Task, forecast: Forecast | None = None) -> str:
    """The reminder text: a headline with the task and its time, then notes and weather."""
    when = describe_window(start=task.start_time, end=task.end_time, segment=task.segment)
    lines = [f"Reminder: {task.title} — {task.due_date:%A %d %B}, {when}."]
    if task.notes:
        lines.append(f"Notes: {task.notes}")
    if forecast is not None:
        lines.append(_weather_line(forecast))
    return "\n".join(lines)


def _weather_line(forecast: Forecast) -> str:
    summary = (
        f"Weather in {forecast.city}: {forecast.condition}, "
        f"{forecast.temp_min:.0f}–{forecast.temp_max:.0f}°C"
    )
    if forecast.precipitation_probability is not None:
        summary += f", {forecast.precipitation_probability}% chance of precipitation"
    advice = weather_advice(forecast)
    return f"{summary} — {'; '.join(advice)}." if advice else f"{summary}."


def reminder_schedule(
    *,
    user: Any,
    task: Task,
    zone: ZoneInfo,
    now: datetime,
    forecast: Forecast | None = None,
    channel: str = Channel.CHAT,
) -> Outcome:
    """Schedule the task's reminder at the time the rules give (in the user's timezone); a
    task that already has a pending reminder is a conflict, a time already past an error."""
    existing = Reminder.objects.filter(task=task, status=ReminderStatus.PENDING).first()
    if existing is not None:
        return conflict(
            f"“{task.title}” already has a reminder at "
            f"{existing.remind_at.astimezone(zone):%A %H:%M}; cancel it first to set another.",
            reminder=reminder_as_data(existing, zone),
        )
    decision = remind_at_for(
        day=task.due_date, start=task.start_time, segment=task.segment, zone=zone, now=now
    )
    if decision.at is None:
        return error(f"No reminder set: {decision.refusal}")
    reminder = Reminder.objects.create(
        user=user,
        task=task,
        remind_at=decision.at,
        due_at=decision.at,
        content=reminder_content(task=task, forecast=forecast),
        channel=channel,
    )
    note = ""
    if channel == Channel.EMAIL and not (settings.REMINDER_EMAIL_FROM and user.email):
        note = " Email is not set up for this user, so it will come in chat only."
    return success(
        f"Reminder set for {decision.at:%A %d %B %H:%M} ({decision.rule}, {zone}).{note}",
        reminder=reminder_as_data(reminder, zone),
        rule=decision.rule,
        weather=forecast.as_data() if forecast else None,
    )


def reminder_cancel(*, user: Any, reminder_id: int, zone: ZoneInfo) -> Outcome:
    """Cancel a pending reminder. The update is conditional on `pending`, so it cannot undo a
    send: if a dispatcher holds the row it waits, then sees `sent` and changes nothing."""
    if _cancel(Reminder.objects.filter(pk=reminder_id, user=user)):
        reminder = Reminder.objects.get(pk=reminder_id)
        return success("Reminder cancelled.", reminder=reminder_as_data(reminder, zone))
    reminder = Reminder.objects.filter(pk=reminder_id, user=user).first()
    if reminder is None:
        return error(f"You have no reminder #{reminder_id}.")
    if reminder.status == ReminderStatus.CANCELLED:
        return success(
            "That reminder was already cancelled.", reminder=reminder_as_data(reminder, zone)
        )
    return error(
        f"That reminder is already {reminder.status}; it cannot be cancelled.",
        reminder=reminder_as_data(reminder, zone),
    )


def reminders_cancel(*, reminder_ids: list[int]) -> int:
    """Cancel those of the reminders that are still pending (admin); how many."""
    return _cancel(Reminder.objects.filter(pk__in=reminder_ids))


def reminders_cancel_for_task(*, task: Task) -> int:
    """Cancel the task's pending reminders; how many."""
    return _cancel(Reminder.objects.filter(task=task))


def _cancel(reminders: Any) -> int:
    return reminders.filter(status=ReminderStatus.PENDING).update(status=ReminderStatus.CANCELLED)


@transaction.atomic
def reminders_follow_task(*, task: Task, zone: ZoneInfo, now: datetime) -> str:
    """Move the task's pending reminders to the rule's time for its new date or time (weather
    lines are kept); cancel them if that time is already past. A note for the user."""
    moved = cancelled = 0
    decision = remind_at_for(
        day=task.due_date, start=task.start_time, segment=task.segment, zone=zone, now=now
    )
    for reminder in Reminder.objects.select_for_update().filter(
        task=task, status=ReminderStatus.PENDING
    ):
        if decision.at is None:
            cancelled += _cancel(Reminder.objects.filter(pk=reminder.pk))
            continue
        _, _, rest = reminder.content.partition("\n")
        Reminder.objects.filter(pk=reminder.pk, status=ReminderStatus.PENDING).update(
            remind_at=decision.at,
            due_at=decision.at,
            content="\n".join([reminder_content(task=task), *_kept_lines(rest)]),
        )
        moved += 1
    if moved:
        return f" Its reminder moved to {decision.at:%A %d %B %H:%M}."
    if cancelled:
        return f" Its reminder was cancelled: {decision.refusal}"
    return ""


def _kept_lines(rest: str) -> list[str]:
    """Lines after the headline other than old notes (the new notes come from the task)."""
    return [line for line in rest.split("\n") if line and not line.startswith("Notes: ")]


def reminders_send_now(*, reminder_ids: list[int], now: datetime) -> int:
    """Make pending or failed reminders due now (admin's "send now"); a failed one starts its
    attempts again. The dispatcher sends them on its next pass; how many were queued."""
    queued = Reminder.objects.filter(pk__in=reminder_ids, status=ReminderStatus.PENDING).update(
        due_at=now
    )
    queued += Reminder.objects.filter(pk__in=reminder_ids, status=ReminderStatus.FAILED).update(
        status=ReminderStatus.PENDING, due_at=now, attempts=0
    )
    return queued


def reminder_admin_save(*, reminder: Reminder) -> Reminder:
    """Save a reminder written in admin: a pending one is due at its (possibly new) time."""
    if reminder.status == ReminderStatus.PENDING:
        reminder.due_at = reminder.remind_at
    reminder.save()
    return reminder
