"""Writes of reminders: schedule by the rules, cancel safely against dispatch, follow a task."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from config.text import sentences
from reminders.dates import day_short, day_short_time, describe_window, weekday_time, when_said
from reminders.models import Channel, Reminder, ReminderStatus, Task
from reminders.outcome import Outcome, conflict, error, success
from reminders.remind_time import ASKED, remind_at_asked, remind_at_for, rule_name
from reminders.selectors import reminder_as_data
from reminders.weather import Forecast, advice_list, condition_name, weather_advice

# Why a reminder that is no longer pending cannot be cancelled, by its status.
_NOT_CANCELLABLE = {
    ReminderStatus.SENT: gettext_lazy("That reminder is already sent; it cannot be cancelled."),
    ReminderStatus.FAILED: gettext_lazy("That reminder is already failed; it cannot be cancelled."),
}
# Why a reminder cannot be moved, by its status.
_NOT_MOVABLE: dict[str, Any] = {
    ReminderStatus.SENT: gettext_lazy("That reminder is already sent; it cannot be moved."),
    ReminderStatus.FAILED: gettext_lazy("That reminder failed; it cannot be moved."),
    ReminderStatus.CANCELLED: gettext_lazy("That reminder is cancelled; it cannot be moved."),
}


def reminder_content(*, task: Task, forecast: Forecast | None = None) -> str:
    """The reminder text in the active language: a headline with the task and its time, then
    notes and weather."""
    when = describe_window(start=task.start_time, end=task.end_time, segment=task.segment)
    lines = [
        _("Reminder: %(title)s — %(day)s, %(when)s.")
        % {"title": task.title, "day": day_short(task.due_date), "when": when}
    ]
    if task.notes:
        lines.append(_notes_line(task.notes))
    if forecast is not None:
        lines.append(_weather_line(forecast))
    return "\n".join(lines)


def _notes_line(notes: str) -> str:
    return _("Notes: %(notes)s") % {"notes": notes}


def _weather_line(forecast: Forecast) -> str:
    values = {
        "city": forecast.city,
        "condition": condition_name(forecast.condition),
        "low": f"{forecast.temp_min:.0f}",
        "high": f"{forecast.temp_max:.0f}",
        "chance": forecast.precipitation_probability,
        "advice": advice_list(weather_advice(forecast)),
    }
    rain = forecast.precipitation_probability is not None
    if rain and values["advice"]:
        return (
            _(
                "Weather in %(city)s: %(condition)s, %(low)s–%(high)s°C, %(chance)s%% chance of "
                "precipitation — %(advice)s."
            )
            % values
        )
    if rain:
        return (
            _(
                "Weather in %(city)s: %(condition)s, %(low)s–%(high)s°C, %(chance)s%% chance of "
                "precipitation."
            )
            % values
        )
    if values["advice"]:
        return _("Weather in %(city)s: %(condition)s, %(low)s–%(high)s°C — %(advice)s.") % values
    return _("Weather in %(city)s: %(condition)s, %(low)s–%(high)s°C.") % values


def reminder_schedule(
    *,
    user: Any,
    task: Task,
    zone: ZoneInfo,
    now: datetime,
    forecast: Forecast | None = None,
    channel: str = Channel.CHAT,
    asked: tuple[date, time] | None = None,
) -> Outcome:
    """Schedule the task's reminder at the (day, time) the user `asked` for, else at the time
    the default rules give, in the user's timezone; a task that already has a pending reminder
    is a conflict, a time already past an error. The answer says when it will come."""
    existing = Reminder.objects.filter(task=task, status=ReminderStatus.PENDING).first()
    if existing is not None:
        return conflict(
            _("“%(title)s” already has a reminder at %(at)s; cancel it first to set another.")
            % {"title": task.title, "at": weekday_time(existing.remind_at.astimezone(zone))},
            reminder=reminder_as_data(existing, zone),
        )
    if asked is not None:
        decision = remind_at_asked(day=asked[0], at=asked[1], zone=zone, now=now)
    else:
        decision = remind_at_for(
            day=task.due_date, start=task.start_time, segment=task.segment, zone=zone, now=now
        )
    if decision.at is None:
        return error(_("No reminder set: %(reason)s") % {"reason": decision.refusal})
    reminder = Reminder.objects.create(
        user=user,
        task=task,
        remind_at=decision.at,
        due_at=decision.at,
        content=reminder_content(task=task, forecast=forecast),
        channel=channel,
        language=translation.get_language() or "",
    )
    message = reminder_set_message(decision.at, rule=decision.rule, zone=zone, now=now)
    if channel == Channel.EMAIL and not (settings.REMINDER_EMAIL_FROM and user.email):
        message = sentences(
            message, _("Email is not set up for this user, so it will come in chat only.")
        )
    return success(
        message,
        reminder=reminder_as_data(reminder, zone),
        rule=decision.rule,
        weather=forecast.as_data() if forecast else None,
    )


def reminder_set_message(at: datetime, *, rule: str, zone: ZoneInfo, now: datetime) -> str:
    """When the reminder will come, as the user reads it in their timezone and language:
    "Reminder set for tomorrow (Thu 12 Jun) at 09:00 (Asia/Taipei)." and, when the user named
    no time, which default rule chose it."""
    values = {
        "when": when_said(at.astimezone(zone), now.astimezone(zone).date()),
        "zone": str(zone),
        "rule": rule_name(rule),
    }
    if rule == ASKED:
        return _("Reminder set for %(when)s (%(zone)s).") % values
    return (
        _("Reminder set for %(when)s (%(zone)s): no time was asked for it, so %(rule)s.") % values
    )


def reminder_cancel(*, user: Any, reminder_id: int, zone: ZoneInfo) -> Outcome:
    """Cancel a pending reminder. The update is conditional on `pending`, so it cannot undo a
    send: if a dispatcher holds the row it waits, then sees `sent` and changes nothing."""
    if _cancel(Reminder.objects.filter(pk=reminder_id, user=user)):
        reminder = Reminder.objects.get(pk=reminder_id)
        return success(_("Reminder cancelled."), reminder=reminder_as_data(reminder, zone))
    reminder = Reminder.objects.filter(pk=reminder_id, user=user).first()
    if reminder is None:
        return error(_("You have no reminder #%(id)s.") % {"id": reminder_id})
    if reminder.status == ReminderStatus.CANCELLED:
        return success(
            _("That reminder was already cancelled."), reminder=reminder_as_data(reminder, zone)
        )
    return error(
        str(_NOT_CANCELLABLE.get(reminder.status, _NOT_CANCELLABLE[ReminderStatus.SENT])),
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
        # Rewritten in the language the reminder was written in, so its lines stay in one.
        with translation.override(reminder.language or None):
            content = _moved_content(reminder.content, task)
        Reminder.objects.filter(pk=reminder.pk, status=ReminderStatus.PENDING).update(
            remind_at=decision.at, due_at=decision.at, content=content
        )
        moved += 1
    if moved:
        return _("Its reminder moved to %(at)s.") % {"at": day_short_time(decision.at)}
    if cancelled:
        return _("Its reminder was cancelled: %(reason)s") % {"reason": decision.refusal}
    return ""


def _moved_content(content: str, task: Task) -> str:
    """A new headline and notes (from the task), with the other lines (weather) kept."""
    _headline, _newline, rest = content.partition("\n")
    old_notes = _notes_line("")
    kept = [line for line in rest.split("\n") if line and not line.startswith(old_notes)]
    return "\n".join([reminder_content(task=task), *kept])


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


@transaction.atomic
def reminder_move(*, reminder: Reminder, at: datetime, zone: ZoneInfo, now: datetime) -> Outcome:
    """Move a pending reminder to the wall-clock time `at` (naive, in `zone`) the user chose;
    a time already past is refused, and one no longer pending (sent meanwhile) is not moved."""
    decision = remind_at_asked(day=at.date(), at=at.time(), zone=zone, now=now)
    if decision.at is None:
        return error(_("The reminder was not moved: %(reason)s") % {"reason": decision.refusal})
    moved = Reminder.objects.filter(pk=reminder.pk, status=ReminderStatus.PENDING).update(
        remind_at=decision.at, due_at=decision.at
    )
    reminder.refresh_from_db()
    if not moved:
        return error(
            str(_NOT_MOVABLE.get(reminder.status, _NOT_MOVABLE[ReminderStatus.SENT])),
            reminder=reminder_as_data(reminder, zone),
        )
    return success(
        reminder_set_message(decision.at, rule=ASKED, zone=zone, now=now),
        reminder=reminder_as_data(reminder, zone),
    )


def task_reminder_set(*, task: Task, at: datetime | None, zone: ZoneInfo, now: datetime) -> Outcome:
    """Give the task its reminder at the wall-clock time `at` (naive, in `zone`): its pending
    reminder moves there, or one is scheduled; None cancels its pending reminders."""
    if at is None:
        cancelled = reminders_cancel_for_task(task=task)
        return success(_("Reminder cancelled.") if cancelled else "")
    pending = Reminder.objects.filter(task=task, status=ReminderStatus.PENDING).first()
    if pending is not None:
        return reminder_move(reminder=pending, at=at, zone=zone, now=now)
    return reminder_schedule(
        user=task.user, task=task, zone=zone, now=now, asked=(at.date(), at.time())
    )
