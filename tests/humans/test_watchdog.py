"""The periodic wait check: a cycle of waits times out its oldest waiter; an overdue chain of
waits times out its oldest waiter (releasing the rest); a wait with nothing left to wait for
is resumed. Each is reported in the activity log."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import ChatSession
from delegation.humans.models import Activity, ActivityKind
from delegation.humans.watchdog import waits_check
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from delegation.sweeper import runs_sweep
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def nowhere(settings):
    """Resumed runs are queued (their task goes to an in-memory broker nobody reads)."""
    settings.CELERY_BROKER_URL = "memory://"


def a_run(user, *, parent: Run | None = None, **fields) -> Run:
    agent = make_agent()
    if parent is None:
        session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
        run = run_create(agent=agent, user=user, session=session, task="t", transcript=[])
    else:
        run = run_create(agent=agent, user=user, session=parent.session, task="t", transcript=[])
        fields = {"parent": parent, "root": parent.root or parent, "depth": 1, **fields}
        fields["path"] = [*parent.path, agent.name]
    Run.objects.filter(pk=run.pk).update(**fields)
    run.refresh_from_db()
    return run


def test_a_cycle_of_waits_times_out_its_oldest_waiter_and_is_reported(user):
    long_ago, lately = timezone.now() - timedelta(minutes=5), timezone.now() - timedelta(minutes=1)
    first = a_run(user, status=RunStatus.WAITING, waiting_since=long_ago)
    second = a_run(user, parent=first, status=RunStatus.WAITING, waiting_since=lately)
    Run.objects.filter(pk=first.pk).update(parent=second)  # first waits on second and back
    assert waits_check()["cycles"] == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == RunStatus.TIMED_OUT and first.error["code"] == "wait_cycle"
    assert second.status == RunStatus.QUEUED  # its expert ended: it goes on
    (row,) = Activity.objects.filter(kind=ActivityKind.WAIT_CYCLE)
    assert row.run_id == first.id and "cycle" in row.summary
    assert waits_check()["cycles"] == 0


def test_an_overdue_chain_of_waits_times_out_the_oldest_waiter(user):
    past = timezone.now() - timedelta(seconds=1)
    root = a_run(user, status=RunStatus.WAITING, deadline=past, waiting_since=past)
    child = a_run(user, parent=root, status=RunStatus.WAITING_HUMAN, deadline=past)
    assert runs_sweep()["timed_out"] == 1
    root.refresh_from_db()
    child.refresh_from_db()
    assert root.status == RunStatus.TIMED_OUT and child.status == RunStatus.CANCELLED
    (row,) = Activity.objects.filter(kind=ActivityKind.WAIT_TIMEOUT)
    assert row.run_id == root.id and "waited past its deadline" in row.summary


def test_an_overdue_expert_is_timed_out_and_its_caller_goes_on(user):
    past, later = timezone.now() - timedelta(seconds=1), timezone.now() + timedelta(minutes=5)
    root = a_run(user, status=RunStatus.WAITING, deadline=later)
    child = a_run(user, parent=root, status=RunStatus.WAITING_HUMAN, deadline=past)
    assert waits_check()["timed_out"] == 1
    child.refresh_from_db()
    root.refresh_from_db()
    assert child.status == RunStatus.TIMED_OUT and root.status == RunStatus.QUEUED


def test_a_wait_with_nothing_left_to_wait_for_is_resumed_once_it_is_stale(user, settings):
    stale = timezone.now() - timedelta(seconds=settings.QUEUED_STALE_SECONDS + 1)
    lost = a_run(user, status=RunStatus.WAITING, waiting_since=stale)
    fresh = a_run(user, status=RunStatus.WAITING, waiting_since=timezone.now())
    assert waits_check()["stuck"] == 1
    lost.refresh_from_db()
    fresh.refresh_from_db()
    assert (lost.status, fresh.status) == (RunStatus.QUEUED, RunStatus.WAITING)
    assert Activity.objects.filter(kind=ActivityKind.WAIT_STUCK, run=lost).count() == 1
