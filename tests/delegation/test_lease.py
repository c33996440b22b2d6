"""Leases: renewed while a run is worked on, by one thread per process however many runs; a run
taken from its worker is noticed; nothing is renewed once the worker is done."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from chat.models import ChatSession
from delegation.models import Run
from delegation.runs.claim import run_claim
from delegation.runs.create import run_create
from delegation.runs.lease import LeaseKeeper
from delegation.runs.writes import RunStopped
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)  # the keeper renews on its own connection


@pytest.fixture
def short_lease(settings):
    settings.RUN_LEASE_SECONDS = 0.6  # renewed every 0.2 s


def claimed_run(user, agent) -> Run:
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    run = run_create(agent=agent, user=user, session=session, task="q", transcript=[])
    return run_claim(run_id=run.id)[0].run


def expiry(run: Run):
    return Run.objects.values_list("lease_expires_at", flat=True).get(pk=run.pk)


def eventually(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_held_lease_is_renewed_until_its_worker_is_done(user, short_lease):
    run = claimed_run(user, make_agent("solo"))
    first = expiry(run)
    with LeaseKeeper(run) as lease:
        assert eventually(lambda: expiry(run) > first)
        lease.check()  # still ours
    time.sleep(0.25)  # a renewal already under way when it ended may still land
    done = expiry(run)
    time.sleep(0.6)  # three renewal periods
    assert expiry(run) == done


def test_a_run_taken_from_its_worker_is_noticed(user, short_lease):
    run = claimed_run(user, make_agent("solo"))
    with LeaseKeeper(run) as lease:
        Run.objects.filter(pk=run.pk).update(lease_token=uuid.uuid4())  # another worker's now
        assert eventually(lease.lost.is_set)
        with pytest.raises(RunStopped):
            lease.check()


def test_one_thread_renews_every_lease_of_the_process(user, short_lease):
    agent = make_agent("solo")
    runs = [claimed_run(user, agent) for _ in range(12)]
    before = {run.pk: expiry(run) for run in runs}
    leases = [LeaseKeeper(run) for run in runs]
    for lease in leases:
        lease.__enter__()
    try:
        assert eventually(lambda: all(expiry(run) > before[run.pk] for run in runs))
        keepers = [t for t in threading.enumerate() if t.name == "run-keeper"]
        assert len(keepers) == 1
    finally:
        for lease in leases:
            lease.__exit__(None, None, None)
