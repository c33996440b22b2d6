"""Exactly once across real processes (Postgres, Redis, Celery workers): a worker SIGKILLed
while it runs an approved tool leaves nothing behind, the run is taken over and the tool runs
once; two staff deciding at once: the first decision wins. Counted in the test's own table."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import connection

from config.errors import AppError
from delegation.humans.decisions import item_decide
from delegation.humans.models import InboxItem, ItemStatus
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from tests.factories import make_user
from tests.fake_openai import Team, text, tool_call
from tests.humans.conftest import agent
from tests.humans.effect_tool import effect_count, effect_table

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


def worker_env(fake_openai, **extra: str) -> dict[str, str]:
    """Workers that import the effect tool, talk to the fake model, recover quickly."""
    return {
        "DJANGO_SETTINGS_MODULE": "tests.humans.worker_settings",
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MAX_RETRIES": "0",
        "OPENAI_TIMEOUT": "40",
        "RUN_LEASE_SECONDS": "2",
        "SWEEP_INTERVAL_SECONDS": "1",
        **extra,
    }


def wait_until(predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def waiting_item(user, team: Team, marker: str) -> tuple[Run, InboxItem]:
    """A turn whose approval-gated tool call waits in the inbox."""
    team.script("clerk", tool_call("record_effect", {"marker": marker}), text("Recorded once."))
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="go")
    wait_until(lambda: InboxItem.objects.filter(run=sent.run).exists())
    wait_until(lambda: Run.objects.get(pk=sent.run.id).status == RunStatus.WAITING_HUMAN)
    return sent.run, InboxItem.objects.get(run=sent.run)


@pytest.fixture
def clerk(db, effects):
    effect_table()
    return agent("clerk", is_entry=True, tool_keys=["record_effect"], require_approval=True)


def test_a_worker_killed_while_running_an_approved_tool_runs_it_exactly_once(
    workers, user, staff, clerk, fake_openai, tmp_path
):
    team = Team(fake_openai)
    pause = tmp_path / "inside-the-tool"
    first = workers.start(
        "w1", beat=True, **worker_env(fake_openai, HUMANS_TEST_PAUSE_FILE=str(pause))
    )
    run, item = waiting_item(user, team, "kill-1")

    item_decide(item=item, user=staff, decision="approve")
    wait_until(pause.exists)  # the tool wrote its row and sleeps inside the transaction
    assert Run.objects.get(pk=run.id).status == RunStatus.RUNNING
    workers.kill(first)
    assert effect_count("kill-1") == 0  # the write died with the worker's transaction
    item.refresh_from_db()
    assert item.executed_at is None and item.status == ItemStatus.APPROVED

    workers.start("w2", beat=True, **worker_env(fake_openai, HUMANS_TEST_PAUSE_FILE=str(pause)))
    wait_until(lambda: Run.objects.get(pk=run.id).status == RunStatus.SUCCEEDED)
    assert effect_count("kill-1") == 1
    item.refresh_from_db()
    assert item.executed_at is not None and '"marker": "kill-1"' in item.result
    final = Run.objects.get(pk=run.id)
    assert final.answer == "Recorded once." and final.worker.startswith("w2@")
    assert len(team.requests["clerk"]) == 2  # the model was not asked again for the call
    with pytest.raises(AppError) as late:
        item_decide(item=item, user=staff, decision="approve")
    assert late.value.code == "already_decided"
    assert effect_count("kill-1") == 1


def test_two_staff_deciding_at_once_on_postgres_the_first_decision_wins(
    workers, user, staff, clerk, fake_openai
):
    team = Team(fake_openai)
    workers.start("w1", **worker_env(fake_openai))
    run, item = waiting_item(user, team, "race-pg")
    other = make_user("olga", is_staff=True, is_superuser=True)
    barrier, outcomes = threading.Barrier(2), []

    def decide(person, decision):
        barrier.wait()
        try:
            outcomes.append(item_decide(item=item, user=person, decision=decision).status)
        except AppError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=decide, args=(staff, "approve")),
        threading.Thread(target=decide, args=(other, "reject")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) in (["already_decided", "approved"], ["already_decided", "rejected"])
    wait_until(lambda: Run.objects.get(pk=run.id).status == RunStatus.SUCCEEDED)
    item.refresh_from_db()
    assert effect_count("race-pg") == (1 if item.status == ItemStatus.APPROVED else 0)


def test_a_worker_killed_inside_a_data_tool_leaves_nothing_and_the_takeover_runs_it_once(
    workers, user, fake_openai, tmp_path
):
    """A tool that changes only this database (no approval) runs in one commit with its result:
    the killed worker's write is rolled back, and the worker that takes over runs it once,
    without asking anyone."""
    effect_table()
    agent("clerk", is_entry=True, tool_keys=["record_effect"])
    team = Team(fake_openai)
    team.script("clerk", tool_call("record_effect", {"marker": "kill-2"}), text("Recorded once."))
    pause = tmp_path / "inside-the-tool"
    first = workers.start(
        "w1", beat=True, **worker_env(fake_openai, HUMANS_TEST_PAUSE_FILE=str(pause))
    )
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="go")
    wait_until(pause.exists)  # the tool wrote its row and sleeps inside the step's commit
    workers.kill(first)
    assert effect_count("kill-2") == 0  # the write died with the worker's transaction

    workers.start("w2", beat=True, **worker_env(fake_openai, HUMANS_TEST_PAUSE_FILE=str(pause)))
    wait_until(lambda: Run.objects.get(pk=sent.run.id).status == RunStatus.SUCCEEDED)
    assert effect_count("kill-2") == 1
    assert not InboxItem.objects.filter(run=sent.run).exists()  # nobody had to be asked
    assert Run.objects.get(pk=sent.run.id).answer == "Recorded once."
