"""Scheduled agent runs: the django-celery-beat entry follows the schedule, and a run sends the
prompt to the agent in the user's session, where the answer is saved like any turn."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Group
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from chat.models import ChatMessage
from delegation.models import FINAL_STATUSES, Run
from reminders.models import ScheduledPrompt
from reminders.services.schedules import (
    TASK_NAME,
    scheduled_prompt_delete,
    scheduled_prompt_run,
    scheduled_prompt_save,
)
from tests.factories import make_agent

MONDAY_8 = datetime(2025, 6, 16, 0, 0, tzinfo=UTC)


@pytest.fixture
def monday_8(db) -> CrontabSchedule:
    return CrontabSchedule.objects.create(
        minute="0", hour="8", day_of_week="1", timezone="Asia/Taipei"
    )


def new_schedule(user, agent, crontab, **fields) -> ScheduledPrompt:
    scheduled = ScheduledPrompt(
        name="Weekly report",
        user=user,
        agent=agent,
        prompt="What is 6*7?",
        crontab=crontab,
        **fields,
    )
    saved = scheduled_prompt_save(scheduled=scheduled)
    # Made a month before the test's clock: its slots from then on are its own.
    ScheduledPrompt.objects.filter(pk=saved.pk).update(created_at=MONDAY_8 - timedelta(days=30))
    saved.refresh_from_db()
    return saved


def wait_for_runs(count: int, timeout: float = 10) -> list[Run]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(parent=None).order_by("created_at"))
        if len(runs) >= count and all(r.status in FINAL_STATUSES for r in runs):
            return runs
        time.sleep(0.05)
    raise AssertionError("runs did not finish")


@pytest.mark.django_db
def test_saving_keeps_the_beat_entry_in_step(user, monday_8):
    agent = make_agent("finance", tool_keys=["calculate"])
    scheduled = new_schedule(user, agent, monday_8)
    entry = PeriodicTask.objects.get(pk=scheduled.periodic_task_id)
    assert entry.task == TASK_NAME == "reminders.run_scheduled_prompt"
    assert json.loads(entry.args) == [scheduled.pk]
    assert entry.crontab == monday_8 and entry.enabled
    scheduled.enabled = False
    scheduled_prompt_save(scheduled=scheduled)
    assert not PeriodicTask.objects.get(pk=entry.pk).enabled
    assert PeriodicTask.objects.filter(task=TASK_NAME).count() == 1
    scheduled_prompt_delete(scheduled=scheduled)
    assert not PeriodicTask.objects.filter(task=TASK_NAME).exists()
    assert not ScheduledPrompt.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_asks_the_agent_in_the_users_session_and_the_answer_is_saved(user, monday_8):
    agent = make_agent("finance", tool_keys=["calculate"])
    make_agent("assistant", is_entry=True)  # not the one that answers
    scheduled = new_schedule(user, agent, monday_8)
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=MONDAY_8) == "sent"
    (run,) = wait_for_runs(1)
    scheduled.refresh_from_db()
    assert run.agent == agent and run.user == user and run.session == scheduled.session
    assert run.status == "succeeded" and "6*7 = 42" in run.answer
    assert scheduled.session.title == "Weekly report" and scheduled.session.agent == agent
    assert scheduled.last_run_at == MONDAY_8 and scheduled.last_error == ""
    # A duplicated beat delivery in the same minute starts nothing.
    assert scheduled_prompt_run(
        scheduled_id=scheduled.pk, now=MONDAY_8 + timedelta(seconds=20)
    ) == ("duplicate")
    # Next week: the same session gets the next turn.
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=MONDAY_8 + timedelta(days=7)) == (
        "sent"
    )
    runs = wait_for_runs(2)
    assert {r.session_id for r in runs} == {scheduled.session_id}
    assert ChatMessage.objects.filter(session=scheduled.session, role="user").count() == 2


@pytest.mark.django_db
def test_an_agent_the_user_may_not_use_is_recorded_not_run(user, monday_8):
    agent = make_agent("payroll", access_group=Group.objects.create(name="hr"))
    scheduled = new_schedule(user, agent, monday_8)
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=MONDAY_8) == "agent_forbidden"
    scheduled.refresh_from_db()
    assert "may not use agent payroll" in scheduled.last_error and scheduled.session is None
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_disabled_or_deleted_schedules_do_nothing(user, monday_8):
    scheduled = new_schedule(user, make_agent("finance"), monday_8, enabled=False)
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=MONDAY_8) == "skipped"
    assert scheduled_prompt_run(scheduled_id=9999, now=MONDAY_8) == "skipped"
    assert not Run.objects.exists()
