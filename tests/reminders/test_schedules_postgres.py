"""On Postgres, concurrently: the same request made in several workers at once creates one
schedule, and several firings of one slot at once (beat's catch-up on two hosts) run it once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django_celery_beat.models import CrontabSchedule

from chat.models import ChatMessage
from reminders.models import ScheduledPrompt
from reminders.services.schedule_requests import schedule_create
from reminders.services.schedules import scheduled_prompt_run, scheduled_prompt_save
from tests.e2e.conftest import require_distributed
from tests.factories import make_agent
from tests.reminders.conftest import user_in

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]
RACERS = 6


@pytest.fixture(autouse=True)
def postgres() -> None:
    require_distributed()


def race(work) -> list:
    """Run `work()` in RACERS threads released together; their results (or exceptions)."""
    gate = threading.Barrier(RACERS)
    results: list = []

    def one() -> None:
        gate.wait()
        try:
            results.append(work())
        except Exception as exc:  # noqa: BLE001 - reported to the test
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_the_same_request_at_once_in_several_workers_makes_one_schedule():
    user = user_in("Asia/Taipei", "tina")
    agent = make_agent("finance")
    results = race(
        lambda: schedule_create(
            user=user, agent=agent, prompt="週報告", words="每週一早上", request_key="m1:abc"
        )
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    assert ScheduledPrompt.objects.count() == 1
    assert sum(r.created for r in results) == 1
    assert len({r.scheduled.pk for r in results}) == 1


def test_one_slot_fired_at_once_on_several_hosts_runs_once_marked_late():
    user = user_in("Asia/Taipei", "tina")
    crontab = CrontabSchedule.objects.create(
        minute="0", hour="8", day_of_week="1", timezone="Asia/Taipei"
    )
    slot = datetime(2025, 6, 16, 0, 0, tzinfo=UTC)
    scheduled = ScheduledPrompt(
        name="Weekly", user=user, agent=make_agent("finance"), prompt="週報告", crontab=crontab
    )
    scheduled_prompt_save(scheduled=scheduled)
    ScheduledPrompt.objects.filter(pk=scheduled.pk).update(created_at=slot - timedelta(days=30))
    back_up = slot + timedelta(hours=2)
    results = race(lambda: scheduled_prompt_run(scheduled_id=scheduled.pk, now=back_up))
    assert sorted(results) == ["duplicate"] * (RACERS - 1) + ["late"], results
    assert ChatMessage.objects.filter(role="user").count() == 1
