"""The sweeper: deadlines, dead workers and lost tasks, each handled once."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageStatus
from delegation.models import Run, RunStatus
from delegation.runs.claim import run_claim
from delegation.runs.create import run_create
from delegation.runs.emitter import RunEmitter
from delegation.runs.writes import run_heartbeat
from delegation.sweeper import runs_recover_orphans, runs_sweep
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[str]:
    """Run ids the sweeper enqueues (the task itself is not run here)."""
    calls: list[str] = []
    monkeypatch.setattr(
        "delegation.sweeper.run_enqueue", lambda *, run_id: calls.append(str(run_id))
    )
    return calls


def new_run(user, **fields) -> Run:
    agent = make_agent()
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    run = run_create(agent=agent, user=user, session=session, task="t", transcript=[])
    Run.objects.filter(pk=run.pk).update(**fields)
    run.refresh_from_db()
    return run


def test_run_past_its_deadline_times_out_once_with_a_plain_message(user, sent):
    run = new_run(user, status=RunStatus.RUNNING, deadline=timezone.now() - timedelta(seconds=1))
    assert runs_sweep()["timed_out"] == 1
    run.refresh_from_db()
    assert run.status == RunStatus.TIMED_OUT and run.error["code"] == "run_timeout"
    note = ChatMessage.objects.get(run=run)
    assert note.status == MessageStatus.FAILED and "could not finish in time" in note.content
    assert runs_sweep()["timed_out"] == 0


def test_dead_workers_run_is_resent_once_per_lease_period(user, sent, settings):
    settings.RUN_LEASE_SECONDS = 30
    expired = timezone.now() - timedelta(seconds=1)
    run = new_run(user, status=RunStatus.RUNNING, lease_expires_at=expired, queued_at=None)
    alive = new_run(
        user, status=RunStatus.RUNNING, lease_expires_at=timezone.now() + timedelta(seconds=30)
    )
    assert runs_sweep()["resent"] == 1 and sent == [str(run.id)]
    assert runs_sweep()["resent"] == 0  # not again within the lease period
    Run.objects.filter(pk=run.pk).update(queued_at=timezone.now() - timedelta(seconds=31))
    assert runs_sweep()["resent"] == 1
    assert str(alive.id) not in sent
    assert Run.objects.get(pk=run.pk).lease_expires_at == expired  # a claim will take over


def test_lost_queued_task_is_resent_after_the_stale_period(user, sent, settings):
    settings.QUEUED_STALE_SECONDS = 60
    fresh = new_run(user, queued_at=timezone.now())
    lost = new_run(user, queued_at=timezone.now() - timedelta(seconds=61))
    assert runs_sweep()["resent"] == 1 and sent == [str(lost.id)]
    assert str(fresh.id) not in sent


def test_waiting_and_finished_runs_are_left_alone(user, sent):
    long_ago = timezone.now() - timedelta(hours=1)
    new_run(user, status=RunStatus.WAITING, queued_at=long_ago)
    new_run(user, status=RunStatus.SUCCEEDED, queued_at=long_ago, deadline=long_ago)
    assert runs_sweep() == {"timed_out": 0, "resent": 0}


def test_a_restarted_celery_worker_takes_back_its_own_runs_at_once(user, sent):
    live = timezone.now() + timedelta(seconds=30)  # the dead worker's lease looks alive
    mine = new_run(user, status=RunStatus.RUNNING, worker="w1@host", lease_expires_at=live)
    other = new_run(user, status=RunStatus.RUNNING, worker="w2@host", lease_expires_at=live)
    assert runs_recover_orphans(worker="w1@host") == 1
    assert sent == [str(mine.id)] and str(other.id) not in sent
    claimed, retry_in = run_claim(run_id=mine.id, worker="w1@host")
    assert claimed is not None and retry_in == 0 and claimed.taken_over


def test_the_embedded_server_resends_every_unfinished_run_at_start(user, sent):
    running = new_run(user, status=RunStatus.RUNNING, lease_expires_at=timezone.now())
    queued = new_run(user, status=RunStatus.QUEUED)
    waiting = new_run(user, status=RunStatus.WAITING)
    done = new_run(user, status=RunStatus.SUCCEEDED)
    assert runs_recover_orphans() == 2
    assert set(sent) == {str(running.id), str(queued.id)}
    assert str(waiting.id) not in sent and str(done.id) not in sent


def test_a_run_taken_over_numbers_its_events_past_anything_sent_before(user):
    run = new_run(
        user, status=RunStatus.RUNNING, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    Run.objects.filter(pk=run.pk).update(last_seq=7)
    claimed, _ = run_claim(run_id=run.id)
    assert claimed.taken_over
    assert RunEmitter(claimed.run, foreign=claimed.taken_over).seq >= 7 + 1000
    fresh = new_run(user)
    claimed_fresh, _ = run_claim(run_id=fresh.id)
    assert not claimed_fresh.taken_over and RunEmitter(claimed_fresh.run).seq == 0


def test_streaming_heartbeats_save_the_last_event_number(user):
    run = new_run(user)
    claimed, _ = run_claim(run_id=run.id)
    run_heartbeat(run=claimed.run, seq=42)
    assert Run.objects.get(pk=run.pk).last_seq == 42
