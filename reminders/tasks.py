"""Celery tasks of reminders: thin wrappers that call a service."""

from __future__ import annotations

import uuid
from dataclasses import asdict

from celery import shared_task
from django.utils import timezone

from reminders.dispatch import reminders_dispatch_window
from reminders.schedule_mail import scheduled_mail_send
from reminders.services.schedules import scheduled_prompt_run, scheduled_prompt_run_now


@shared_task(name="reminders.dispatch", ignore_result=True)
def dispatch_reminders() -> dict[str, int]:
    """Beat-driven (every REMINDER_DISPATCH_SECONDS): send the reminders that are due, and
    those falling due before the next trigger as they fall due."""
    return asdict(reminders_dispatch_window())


@shared_task(name="reminders.run_scheduled_prompt", ignore_result=True)
def run_scheduled_prompt(scheduled_id: int) -> str:
    """Beat-driven by a ScheduledPrompt's crontab (a missed slot once, at beat's start): run
    the slot that came due last for its user."""
    return scheduled_prompt_run(scheduled_id=scheduled_id, now=timezone.now())


@shared_task(name="reminders.run_scheduled_prompt_now", ignore_result=True)
def run_scheduled_prompt_now(scheduled_id: int) -> str:
    """Admin's "run now": start that agent turn for its user outside the schedule."""
    return scheduled_prompt_run_now(scheduled_id=scheduled_id, now=timezone.now())


@shared_task(name="reminders.mail_scheduled_answer", ignore_result=True)
def mail_scheduled_answer(run_id: str) -> bool:
    """Mail a scheduled turn's answer to its user (schedules with by_email)."""
    return scheduled_mail_send(run_id=uuid.UUID(run_id))
