"""A run the worker runs next is claimed by the commit that made it ready (a new expert, or a
caller its expert's end resumed): its own claim reads it and writes nothing. One it will not run
after all goes back to the queue unclaimed (delegation.services._ready)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config import enqueue
from delegation import tasks
from delegation.models import Run, RunStatus
from delegation.tasks import advance_run
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run
from tests.fake_openai import delegate, text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(settings, monkeypatch) -> list:
    """Work published to a worker (none runs): task bodies run here, keeping what they may."""
    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = ""
    published = []
    monkeypatch.setattr(enqueue, "_publish", lambda task, args: published.append(args))
    return published


@pytest.fixture
def lead(team, user):
    agents = make_team(lead=["expert"], expert=[])
    team.script("lead", delegate("expert", "What is the Q3 budget?"), text("Finance: 60."))
    team.script("expert", text("The Q3 budget ", "is 60."))
    return start_run(user, agents["lead"], "Q3 budget?")


def claims(queries: list[dict]) -> int:
    """A claim's own writes (not a resumption that claims as it resumes: it clears the wait)."""
    return sum(
        q["sql"].startswith('UPDATE "delegation_run" SET "status" = \'running\'')
        and '"waiting_since"' not in q["sql"]
        for q in queries
    )


def test_the_expert_and_its_resumed_caller_are_claimed_by_the_commits_that_made_them_ready(
    lead, sent
):
    with CaptureQueriesContext(connection) as captured:
        assert advance_run.run(str(lead.id)) == RunStatus.SUCCEEDED
    lead.refresh_from_db()
    expert = Run.objects.get(parent=lead)
    assert lead.answer == "Finance: 60." and expert.status == RunStatus.SUCCEEDED
    assert sent == []  # the expert, then its caller, ran here next without a queue
    # Only the turn's own first claim writes one; the expert was inserted claimed, and its
    # caller resumed claimed.
    assert claims(captured.captured_queries) == 1
    assert expert.started_at is not None and expert.lease_token is not None


def test_a_run_claimed_in_advance_and_not_run_goes_back_to_the_queue_unclaimed(
    lead, sent, monkeypatch
):
    monkeypatch.setattr(tasks, "run_has_time", lambda started: False)  # the task's time is up
    assert advance_run.run(str(lead.id)) == RunStatus.WAITING
    expert = Run.objects.get(parent=lead)
    assert sent == [(str(expert.id),)]  # sent to the queue after all...
    # ...unclaimed, so whoever takes it starts at once instead of waiting out a lease.
    assert (expert.status, expert.lease_token, expert.lease_expires_at) == (
        RunStatus.QUEUED,
        None,
        None,
    )
    assert advance_run.run(str(expert.id)) == RunStatus.SUCCEEDED
