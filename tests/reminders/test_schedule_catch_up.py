"""A scheduled prompt's runs are named by their slot: beat's catch-up of a slot missed while it
was down runs it once, marked late in the chat; a repeated firing runs nothing; an admin's
"run now" runs outside the slots."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django_celery_beat.models import CrontabSchedule

from chat.models import ChatMessage
from delegation.models import FINAL_STATUSES, Run
from reminders.models import ScheduledPrompt
from reminders.schedule_mail import scheduled_mail_send
from reminders.services.schedules import (
    scheduled_prompt_run,
    scheduled_prompt_run_now,
    scheduled_prompt_save,
)
from tests.factories import make_agent
from tests.reminders.conftest import user_in
from tests.waiting import wait_until

SLOT = datetime(2025, 6, 16, 0, 0, tzinfo=UTC)  # Monday 16 June 2025, 08:00 in Taipei


def wait_for_runs(count: int, timeout: float = 20) -> list[Run]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(parent=None).order_by("created_at"))
        if len(runs) >= count and all(r.status in FINAL_STATUSES for r in runs):
            return runs
        time.sleep(0.05)
    raise AssertionError("runs did not finish")


@pytest.fixture
def weekly(db) -> ScheduledPrompt:
    user = user_in("Asia/Taipei", "tina")
    crontab = CrontabSchedule.objects.create(
        minute="0", hour="8", day_of_week="1", timezone="Asia/Taipei"
    )
    scheduled = ScheduledPrompt(
        name="Weekly", user=user, agent=make_agent("finance", tool_keys=["calculate"]),
        prompt="What is 6*7?", crontab=crontab, language="en",
    )  # fmt: skip
    scheduled_prompt_save(scheduled=scheduled)
    ScheduledPrompt.objects.filter(pk=scheduled.pk).update(created_at=SLOT - timedelta(days=30))
    return scheduled


@pytest.mark.django_db(transaction=True)
def test_a_slot_missed_during_downtime_runs_once_and_is_marked_late(weekly, settings):
    settings.REMINDER_LATE_SECONDS = 60
    back_up = SLOT + timedelta(hours=3, minutes=30)  # beat starts again at 11:30 Taipei
    assert scheduled_prompt_run(scheduled_id=weekly.pk, now=back_up) == "late"
    # Beat fires the missed slot once more (a second worker, a restart): nothing runs twice.
    assert scheduled_prompt_run(scheduled_id=weekly.pk, now=back_up + timedelta(seconds=5)) == (
        "duplicate"
    )
    (run,) = wait_for_runs(1)
    asked = ChatMessage.objects.get(session=run.session, role="user")
    assert asked.content.startswith("What is 6*7?")
    assert "(Run late: it was due Monday 16 June 08:00.)" in asked.content
    weekly.refresh_from_db()
    assert weekly.last_run_late and weekly.last_slot_at == SLOT
    # The next Monday on time: a new run, not late.
    on_time = SLOT + timedelta(days=7, seconds=2)
    assert scheduled_prompt_run(scheduled_id=weekly.pk, now=on_time) == "sent"
    runs = wait_for_runs(2)
    assert len(runs) == 2
    weekly.refresh_from_db()
    assert not weekly.last_run_late and weekly.last_slot_at == SLOT + timedelta(days=7)
    assert ChatMessage.objects.filter(role="user").last().content == "What is 6*7?"


@pytest.mark.django_db
def test_no_slot_before_the_schedule_existed_is_caught_up(weekly):
    ScheduledPrompt.objects.filter(pk=weekly.pk).update(created_at=SLOT + timedelta(hours=1))
    assert scheduled_prompt_run(scheduled_id=weekly.pk, now=SLOT + timedelta(hours=2)) == (
        "skipped"
    )
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_run_now_runs_outside_the_slots(weekly):
    at = SLOT + timedelta(days=2)
    assert scheduled_prompt_run_now(scheduled_id=weekly.pk, now=at) == "sent"
    assert scheduled_prompt_run_now(scheduled_id=weekly.pk, now=at + timedelta(seconds=3)) == (
        "duplicate"
    )
    wait_for_runs(1)
    weekly.refresh_from_db()
    assert weekly.last_slot_at is None


@pytest.mark.django_db(transaction=True)
def test_a_schedule_by_email_mails_each_answer_once(weekly, settings, mailoutbox):
    settings.REMINDER_EMAIL_FROM = "reminders@example.com"
    weekly.user.email = "tina@example.com"
    weekly.user.save()
    ScheduledPrompt.objects.filter(pk=weekly.pk).update(by_email=True)
    assert scheduled_prompt_run(scheduled_id=weekly.pk, now=SLOT + timedelta(seconds=3)) == "sent"
    (run,) = wait_for_runs(1)
    wait_until(lambda: len(mailoutbox) == 1)
    [mail] = mailoutbox
    assert mail.to == ["tina@example.com"] and mail.subject == "Weekly"
    assert "42" in mail.body and mail.extra_headers["X-Scheduled-Run"] == str(run.id)
    assert not scheduled_mail_send(run_id=run.id)  # a repeated task mails nothing
    assert len(mailoutbox) == 1


@pytest.mark.django_db(transaction=True)
def test_without_by_email_nothing_is_mailed(weekly, settings, mailoutbox):
    settings.REMINDER_EMAIL_FROM = "reminders@example.com"
    weekly.user.email = "tina@example.com"
    weekly.user.save()
    assert scheduled_prompt_run(scheduled_id=weekly.pk, now=SLOT + timedelta(seconds=3)) == "sent"
    wait_for_runs(1)
    assert mailoutbox == []
