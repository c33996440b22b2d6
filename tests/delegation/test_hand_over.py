"""A run the worker runs next is claimed by the commit that made it ready (a new expert, or a
caller its expert's end resumed): its own claim reads it and writes nothing. One it will not run
after all goes back to the queue unclaimed (delegation.runs.claim.HandOver)."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from delegation import tasks
from delegation.models import Run, RunStatus
from delegation.runs import claim, waits
from delegation.runs.claim import run_claim
from delegation.runs.emitter import RunEmitter
from delegation.runs.ending import run_stop
from delegation.runs.waits import run_resume_if_ready
from delegation.steps import tool_calls
from delegation.steps.step import Delivery, StepKind, run_step
from delegation.steps.tool_calls import _NEWEST_CHILD, _child_result
from delegation.tasks import advance_run
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run
from tests.fake_openai import delegate, text

pytestmark = pytest.mark.django_db(transaction=True)


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
    # Nor read: the expert runs as its delegation left it in memory, its caller as the
    # expert's end read it (locked), with the expert's result as it ended.
    runs_read = [q["sql"] for q in captured.captured_queries if q["sql"].startswith(WHOLE_RUN)]
    assert len(runs_read) == 2, runs_read  # the turn's first claim; the caller, locked
    assert not [q for q in captured.captured_queries if '"parent_tool_call_id" =' in q["sql"]]


# A read of a run with everything its steps use (a claim's, or the locked caller's).
WHOLE_RUN = 'SELECT "delegation_run"."id", "delegation_run"."session_id"'


def test_a_handed_over_expert_s_result_is_the_same_as_one_read(lead, sent):
    """The caller's transcript holds the same result whether its expert's end handed it over
    (taken from memory) or another worker ran it (read)."""
    assert advance_run.run(str(lead.id)) == RunStatus.SUCCEEDED
    lead.refresh_from_db()
    handed_over = lead.transcript[2]
    read = _child_result(lead, _NEWEST_CHILD.row(lead.pk, handed_over["tool_call_id"]))
    assert handed_over["role"] == "tool" and json.loads(handed_over["content"]) == json.loads(read)


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


def handed(run: Run, *, lease_left: float) -> claim.Handed:
    """`run` as a commit claimed it in advance for this task body, its lease ending in
    `lease_left` seconds (its claim reads it)."""
    token = uuid.uuid4()
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING,
        lease_token=token,
        lease_expires_at=timezone.now() + timedelta(seconds=lease_left),
    )
    return claim.Handed(run.pk, token)


def test_a_run_kept_a_while_is_renewed_before_it_runs(lead):
    kept = handed(lead, lease_left=2)  # kept behind a slow tool: its lease nearly over
    claimed, retry_in = run_claim(run_id=lead.id, handed=kept)
    assert claimed is not None and retry_in == 0 and claimed.run.lease_token == kept.token
    lead.refresh_from_db()
    assert lead.lease_expires_at > timezone.now() + timedelta(seconds=20)


def test_a_run_kept_so_long_that_another_worker_took_it_over_is_not_run(lead):
    kept = handed(lead, lease_left=-1)
    Run.objects.filter(pk=lead.pk).update(  # the sweeper re-sent it; another worker took it
        lease_token=uuid.uuid4(), lease_expires_at=timezone.now() + timedelta(seconds=30)
    )
    claimed, retry_in = run_claim(run_id=lead.id, handed=kept)
    assert claimed is None and retry_in > 0  # busy: that worker runs it


def test_a_caller_read_as_still_waiting_before_its_lock_is_read_again_after_it(lead, sent):
    """What the caller waits for is read with its lock, as the lock was asked for; a change
    committed while the lock was awaited (a sibling stopped, a person's answer) is seen by a
    second read after it, so the caller is resumed, not left waiting."""
    Run.objects.filter(pk=lead.pk).update(status=RunStatus.WAITING)
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=lead.pk)
        read = waits.Waits(person=False, expert=True)  # read before the last expert's end
        assert run_resume_if_ready(run_id=lead.pk, locked=locked, waits=read)
    lead.refresh_from_db()
    assert lead.status == RunStatus.QUEUED and sent == [(str(lead.id),)]


def test_a_run_handed_over_whole_and_stopped_before_its_claim_is_not_run(lead, sent):
    token = uuid.uuid4()
    Run.objects.filter(pk=lead.pk).update(
        status=RunStatus.RUNNING,
        lease_token=token,
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )
    whole = Run.objects.select_related("user", "session", "agent").get(pk=lead.pk)
    kept = claim.Handed(lead.pk, token, whole, time.monotonic())
    run_stop(run=lead)  # the user stops the turn after it was handed over, before its claim
    assert run_claim(run_id=lead.id, handed=kept) == (None, 0.0)  # not run: its model is not called


def test_an_expert_s_result_carried_with_a_hand_over_serves_only_the_next_collection(
    lead, sent, monkeypatch
):
    """A call id can come back in a later step, for another expert: what the hand-over
    carried is dropped once the run has collected its results."""
    assert advance_run.run(str(lead.id)) == RunStatus.SUCCEEDED
    caller = Run.objects.select_related("user", "session", "agent").get(pk=lead.pk)
    expert = Run.objects.get(parent=lead)
    caller.transcript = caller.transcript[:2]  # its delegate call, still without a result
    call_id = caller.transcript[-1]["tool_calls"][0]["id"]
    reads = []
    monkeypatch.setattr(tool_calls, "_NEWEST_CHILD", type("R", (), {"row": reads.append})())
    delivery = Delivery(caller, RunEmitter(caller), None, None, {call_id: expert})
    assert run_step(delivery).kind is StepKind.CONTINUE
    assert reads == [] and caller.transcript[-1]["tool_call_id"] == call_id  # from memory
    assert dict(delivery.experts_ended) == {}  # ...and only for this collection


def test_the_first_run_made_ready_is_handed_on_and_the_rest_are_sent(lead, user, sent):
    other = start_run(user, lead.agent, "another turn")
    hand_over = claim.HandOver(worker="w1")
    with transaction.atomic():
        assert claim._ready(lead, hand_over) is True  # claimed for this task body
        assert claim._ready(other, hand_over) is False  # the hand-over is taken: queued
        assert hand_over.next is None  # nothing is handed on before the commit
    assert hand_over.next is not None and hand_over.next.run_id == lead.pk
    assert (lead.status, lead.worker) == (RunStatus.RUNNING, "w1")
    assert hand_over.next.token == lead.lease_token
    assert sent == [(str(other.id),)]


def test_a_run_made_ready_in_a_rollback_is_neither_handed_on_nor_sent(lead, sent):
    hand_over = claim.HandOver(worker="w1")
    with pytest.raises(RuntimeError), transaction.atomic():
        assert claim._ready(lead, hand_over) is True
        raise RuntimeError
    assert hand_over.next is None and sent == []


def test_no_hand_over_when_switched_off_or_tasks_run_where_they_are_sent(settings):
    settings.TASKS_RUN_SYNC, settings.RUN_HAND_OVER = False, True
    assert isinstance(tasks._hand_over("w1"), claim.HandOver)
    settings.RUN_HAND_OVER = False  # for debugging an incident: every run goes to the queue
    assert tasks._hand_over("w1") is None
    settings.TASKS_RUN_SYNC, settings.RUN_HAND_OVER = True, True
    assert tasks._hand_over("w1") is None


def test_with_the_hand_over_off_the_expert_and_its_caller_go_to_the_queue(lead, sent, settings):
    settings.RUN_HAND_OVER = False
    assert advance_run.run(str(lead.id)) == RunStatus.WAITING
    expert = Run.objects.get(parent=lead)
    assert sent == [(str(expert.id),)] and expert.status == RunStatus.QUEUED
    assert advance_run.run(str(expert.id)) == RunStatus.SUCCEEDED
    assert sent[1:] == [(str(lead.id),)]


def test_a_task_body_that_fails_after_handing_a_run_on_sends_it_to_the_queue(
    lead, sent, monkeypatch
):
    """The run a delivery handed on is claimed for this task body: if the body fails before
    running it, it goes back to the queue unclaimed, not left to its lease's expiry."""
    advance = tasks.run_advance

    def fails_after(**kwargs):
        advance(**kwargs)
        raise RuntimeError("the worker's database went away")

    monkeypatch.setattr(tasks, "run_advance", fails_after)
    with pytest.raises(RuntimeError):
        advance_run.run(str(lead.id))
    expert = Run.objects.get(parent=lead)
    assert sent == [(str(expert.id),)]
    assert (expert.status, expert.lease_token) == (RunStatus.QUEUED, None)
