"""Scheduled agent runs: keep each ScheduledPrompt's django-celery-beat entry in step, and run
one by sending its prompt into the user's chat session as a normal turn."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agents.selectors import agent_usable_by
from agents.tools.builtin import user_timezone
from chat.channels.delivery import delivery_expect
from chat.models import ChatSession
from config.errors import AppError
from delegation.turns import turn_start
from reminders.dates import day_short_time
from reminders.models import ScheduledPrompt
from reminders.schedule_mail import scheduled_mail_expect
from reminders.schedule_words import CronSpec
from reminders.slots import last_slot, slot_key

TASK_NAME = "reminders.run_scheduled_prompt"
_IDS = uuid.UUID("5f0b8a4e-3c55-4d8e-9a43-6d1f7b0c2e91")  # namespace of scheduled message ids


@transaction.atomic
def scheduled_prompt_save(
    *, scheduled: ScheduledPrompt, when: CronSpec | None = None, zone: str = ""
) -> ScheduledPrompt:
    """Save the schedule and create or update its beat entry (crontab, enabled, task args).
    `when` (read from words) becomes its crontab in `zone`, reusing an equal one."""
    if when is not None:
        scheduled.crontab = crontab_for(when, zone)
    scheduled.save()
    entry = scheduled.periodic_task or PeriodicTask()
    entry.name = f"Scheduled prompt #{scheduled.pk}: {scheduled.name}"[:200]
    entry.task = TASK_NAME
    entry.crontab = scheduled.crontab
    entry.args = json.dumps([scheduled.pk])
    entry.enabled = scheduled.enabled
    entry.description = f"Run agent {scheduled.agent.name} for {scheduled.user} (reminders admin)."
    entry.save()  # save(), not update(): beat's scheduler notices changes through it
    if scheduled.periodic_task_id != entry.pk:
        scheduled.periodic_task = entry
        scheduled.save(update_fields=["periodic_task"])
    return scheduled


def crontab_for(when: CronSpec, zone: str) -> CrontabSchedule:
    """The django-celery-beat crontab of these fields in `zone` (an equal one is reused)."""
    crontab, _created = CrontabSchedule.objects.get_or_create(
        minute=when.minute,
        hour=when.hour,
        day_of_week=when.day_of_week,
        day_of_month=when.day_of_month,
        month_of_year=when.month_of_year,
        timezone=zone or settings.TIME_ZONE,
    )
    return crontab


def crontab_spec(crontab: CrontabSchedule) -> CronSpec:
    """A crontab's fields, to show it in words."""
    return CronSpec(
        minute=crontab.minute,
        hour=crontab.hour,
        day_of_week=crontab.day_of_week,
        day_of_month=crontab.day_of_month,
        month_of_year=crontab.month_of_year,
    )


@transaction.atomic
def scheduled_prompt_delete(*, scheduled: ScheduledPrompt) -> None:
    """Delete the schedule and its beat entry."""
    if scheduled.periodic_task_id:
        PeriodicTask.objects.filter(pk=scheduled.periodic_task_id).delete()
    scheduled.delete()


def scheduled_prompt_run(*, scheduled_id: int, now: datetime) -> str:
    """Run the slot that came due last (beat's firing, or its catch-up of a slot missed while
    it was down): send the prompt as the user to the agent in the schedule's session (created
    on the first run); the answer streams and is saved like any turn. The schedule's row is
    locked while it starts, and the message id is derived from the slot, so a duplicated or
    repeated firing, on any host, starts nothing twice; a run more than
    REMINDER_LATE_SECONDS after its slot says it is late. Returns what happened."""
    with transaction.atomic():
        scheduled = (
            ScheduledPrompt.objects.select_for_update(of=("self",))
            .select_related("user", "agent", "session", "crontab")
            .filter(pk=scheduled_id)
            .first()
        )
        if scheduled is None or not scheduled.enabled:
            return "skipped"
        slot = last_slot(crontab_spec(scheduled.crontab), str(scheduled.crontab.timezone), now)
        if slot is None or slot < scheduled.created_at:
            return "skipped"  # no slot came due since it exists
        if scheduled.last_slot_at is not None and slot <= scheduled.last_slot_at:
            return "duplicate"  # that slot ran: a repeated firing
        late = (now - slot).total_seconds() > settings.REMINDER_LATE_SECONDS
        text = _late_text(scheduled, slot) if late else scheduled.prompt
        outcome = _start(scheduled, now, key=slot_key(slot), text=text)
        if outcome in ("sent", "duplicate"):
            ScheduledPrompt.objects.filter(pk=scheduled.pk).update(
                last_slot_at=slot, last_run_late=late
            )
    return "late" if outcome == "sent" and late else outcome


def scheduled_prompt_run_now(*, scheduled_id: int, now: datetime) -> str:
    """Run it now, outside its schedule (admin's "run now"): once per minute, its slots
    untouched. Returns what happened."""
    scheduled = (
        ScheduledPrompt.objects.select_related("user", "agent", "session")
        .filter(pk=scheduled_id)
        .first()
    )
    if scheduled is None:
        return "skipped"
    return _start(scheduled, now, key=f"now:{now:%Y-%m-%dT%H:%M}", text=scheduled.prompt)


def _start(scheduled: ScheduledPrompt, now: datetime, *, key: str, text: str) -> str:
    """Start the turn of `key` (one message id per key: a repeat starts nothing) as the user,
    in the schedule's session; "sent", "duplicate" or why not."""
    agent, user = scheduled.agent, scheduled.user
    if not agent.enabled or not agent_usable_by(agent=agent, user=user):
        return _record(scheduled, now, "agent_forbidden", f"{user} may not use agent {agent.name}.")
    session = _session_of(scheduled)
    message_id = uuid.uuid5(_IDS, f"{scheduled.pk}:{key}")
    try:
        with transaction.atomic():  # the answer's way to the chat apps is known before it runs
            sent = turn_start(
                user=user,
                session_id=session.id,
                message_id=message_id,
                text=text,
                origin="scheduled",  # the page labels it, instead of showing it as typed
            )
            if sent.run is not None and sent.created:  # (the answer to linked chat apps too)
                delivery_expect(sent.run.id, notice=True)
                if scheduled.by_email:  # (and by mail)
                    scheduled_mail_expect(sent.run.id)
    except AppError as exc:  # e.g. the previous scheduled turn is still running
        return _record(scheduled, now, exc.code, exc.message)
    _record(scheduled, now, "sent", "")
    return "sent" if sent.created else "duplicate"


def _session_of(scheduled: ScheduledPrompt) -> ChatSession:
    """The schedule's chat session of its user, created on the first run; it follows the
    schedule's agent when that changes."""
    session, agent, user = scheduled.session, scheduled.agent, scheduled.user
    if session is None or session.user_id != user.pk:
        session = ChatSession.objects.create(
            id=uuid.uuid4(), user=user, agent=agent, title=scheduled.name[:200]
        )
        ScheduledPrompt.objects.filter(pk=scheduled.pk).update(session=session)
    elif session.agent_id != agent.pk:
        ChatSession.objects.filter(pk=session.pk).update(agent=agent)
    return session


def _late_text(scheduled: ScheduledPrompt, slot: datetime) -> str:
    """The prompt with a line saying the run is late and when it was due (in the user's
    timezone and language), as late reminders say it."""
    zone = user_timezone(scheduled.user)
    with translation.override(scheduled.language or None):
        line = _("(Run late: it was due %(due)s.)") % {"due": day_short_time(slot.astimezone(zone))}
    return f"{scheduled.prompt}\n\n{line}"


def _record(scheduled: ScheduledPrompt, now: datetime, outcome: str, message: str) -> str:
    ScheduledPrompt.objects.filter(pk=scheduled.pk).update(last_run_at=now, last_error=message)
    return outcome
