"""Escalation: a run waits for a person without a worker; the first decision wins and resumes
only that run; an approved tool runs exactly once (approve, modify, reject, expiry, cancel)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents.registry import get_tool
from chat.models import ChatMessage, MessageRole
from delegation.humans.models import Activity, ActivityKind, InboxItem, ItemStatus
from delegation.humans.waits import approval_execute
from delegation.models import Run, RunStatus
from delegation.runs.claim import run_claim
from delegation.steps.runner import run_advance
from delegation.sweeper import runs_sweep
from tests.factories import make_user
from tests.fake_openai import text, tool_call
from tests.humans.conftest import agent
from tests.humans.effect_tool import effect_amounts, effect_count
from tests.humans.helpers import client, decide, start, tool_results

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    """Enqueued runs run on commit in the calling thread: each step below is deterministic."""
    settings.TASKS_RUN_SYNC = True


@pytest.fixture
def asker(db):
    """An entry agent that may ask staff (its questions go to the Finance group)."""
    return agent("boss", is_entry=True, tool_keys=["ask_human"], human_group="Finance")


@pytest.fixture
def clerk(db, effects):
    """An entry agent whose side-effect tool needs approval (none ticked: every such tool)."""
    return agent("clerk", is_entry=True, tool_keys=["record_effect"], require_approval=True)


def test_ask_human_waits_without_a_worker_and_the_answer_resumes_only_that_run(
    user, staff, team, asker, settings
):
    team.script(
        "boss",
        tool_call("ask_human", {"question": "May I refund order 42?", "urgency": "high"}),
        text("Staff said yes: refunded."),
    )
    before = timezone.now()
    run = start(user, "refund order 42")
    assert run.status == RunStatus.WAITING_HUMAN
    assert run.lease_token is None and run.lease_expires_at is None  # no worker held
    assert run.waiting_since is not None
    item = InboxItem.objects.get(run=run)
    assert (item.kind, item.audience, item.status) == ("question", "staff", "pending")
    assert (item.question, item.urgency, item.group) == (
        "May I refund order 42?",
        "high",
        "Finance",
    )
    assert item.deadline >= before + timedelta(seconds=settings.HUMANS_SLA_SECONDS)
    # The wait does not count against the run's time limit.
    assert run.deadline >= before + timedelta(seconds=settings.RUN_DEADLINE_SECONDS + 3000)
    assert len(team.requests["boss"]) == 1

    answer = decide(client(staff), item.id, decision="approve", answer="Yes, refund it.")
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "answered" and answer.json()["decided_by"] == "stella"

    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.answer == "Staff said yes: refunded."
    assert len(team.requests["boss"]) == 2  # resumed: the first model call was not repeated
    (result,) = tool_results(team.requests["boss"][1])
    assert result["ok"] and result["result"]["answer"] == "Yes, refund it."
    assert result["result"]["answered_by"] == "stella"
    message = ChatMessage.objects.get(run=run, role=MessageRole.TOOL)
    assert message.tool["human"]["status"] == "answered" and message.status == "completed"


def test_an_approved_tool_runs_once_even_when_the_decision_is_sent_twice(user, staff, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": "approve-1"}), text("Done."))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    assert (item.kind, item.tool, item.arguments) == (
        "tool_approval",
        "record_effect",
        {"marker": "approve-1"},
    )
    assert effect_count("approve-1") == 0  # nothing runs before a person approves
    api = client(staff)
    assert decide(api, item.id, decision="approve").status_code == 200
    again = decide(api, item.id, decision="approve")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_decided"
    assert effect_count("approve-1") == 1
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    (result,) = tool_results(team.requests["clerk"][1])
    assert result == {
        "ok": True,
        "result": {
            "status": "recorded",
            "message": "Recorded approve-1 x1.",
            "marker": "approve-1",
            "amount": 1,
        },
    }
    item.refresh_from_db()
    assert item.executed_at is not None and item.status == ItemStatus.APPROVED


def test_modified_arguments_run_instead_and_bad_ones_are_refused(user, staff, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": "modify-1"}), text("Done."))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    api = client(staff)
    bad = decide(api, item.id, decision="modify", arguments={"marker": "modify-1", "amount": 0})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid"
    assert "amount" in bad.json()["error"]["details"]["arguments"]
    missing = decide(api, item.id, decision="modify")
    assert missing.status_code == 400
    good = decide(api, item.id, decision="modify", arguments={"marker": "modify-1", "amount": 7})
    assert good.status_code == 200 and good.json()["status"] == "modified"
    assert effect_amounts("modify-1") == [7]
    message = ChatMessage.objects.get(run=run, role=MessageRole.TOOL)
    assert message.tool["arguments"] == {"marker": "modify-1", "amount": 7}
    assert message.tool["human"]["status"] == "modified"


def test_a_rejected_tool_never_runs_and_the_model_reads_the_refusal(user, staff, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": "reject-1"}), text("Not done."))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    response = decide(client(staff), item.id, decision="reject", note="Not this month.")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert effect_count("reject-1") == 0
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["ok"] is False and result["error"]["code"] == "tool_rejected"
    assert "Not this month." in result["error"]["message"]
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED


def test_an_expired_wait_resumes_the_run_with_no_answer_from_a_human(user, team, asker):
    team.script("boss", tool_call("ask_human", {"question": "Anyone?"}), text("Nobody answered."))
    run = start(user)
    InboxItem.objects.filter(run=run).update(deadline=timezone.now() - timedelta(seconds=1))
    runs_sweep()
    item = InboxItem.objects.get(run=run)
    assert item.status == ItemStatus.EXPIRED
    (result,) = tool_results(team.requests["boss"][1])
    assert result["error"]["code"] == "human_no_answer"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert Activity.objects.filter(kind=ActivityKind.WAIT_EXPIRED, run=run).count() == 1
    runs_sweep()  # expired once
    assert Activity.objects.filter(kind=ActivityKind.WAIT_EXPIRED, run=run).count() == 1


def test_the_user_may_cancel_the_wait_and_a_later_decision_changes_nothing(
    user, staff, team, clerk
):
    team.script("clerk", tool_call("record_effect", {"marker": "cancel-1"}), text("Cancelled."))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    mine = client(user)
    assert mine.get(f"/api/v1/inbox/{item.id}/").status_code == 200  # their own request
    refused = decide(mine, item.id, decision="approve")  # …which only staff may approve
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
    response = mine.post(f"/api/v1/inbox/{item.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    late = decide(client(staff), item.id, decision="approve")
    assert late.status_code == 409 and late.json()["error"]["details"]["status"] == "cancelled"
    assert effect_count("cancel-1") == 0
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["error"]["code"] == "human_cancelled"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED


def test_two_staff_deciding_at_once_the_first_decision_wins(user, staff, team, clerk):
    other = make_user("olga", is_staff=True, is_superuser=True)
    team.script("clerk", tool_call("record_effect", {"marker": "race-1"}), text("Done."))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    barrier, codes = threading.Barrier(2), []

    def decide_as(person, decision):
        api = client(person)
        barrier.wait()
        codes.append(decide(api, item.id, decision=decision).status_code)
        connection.close()

    threads = [
        threading.Thread(target=decide_as, args=(staff, "approve")),
        threading.Thread(target=decide_as, args=(other, "reject")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(codes) == [200, 409]
    item.refresh_from_db()
    assert effect_count("race-1") == (1 if item.status == ItemStatus.APPROVED else 0)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and len(team.requests["clerk"]) == 2


def test_a_resume_after_a_crash_past_the_tools_commit_reuses_its_stored_result(
    user, staff, team, clerk, settings
):
    team.script("clerk", tool_call("record_effect", {"marker": "crash-1"}), text("Done."))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = "memory://"  # the decision's enqueue goes nowhere: no resume
    assert decide(client(staff), item.id, decision="approve").status_code == 200
    # A worker claims the run and runs the tool, then dies before saving the transcript.
    claimed = run_claim(run_id=run.id, worker="doomed")[0].run
    item.refresh_from_db()
    approval_execute(item=item, run=claimed, tools={"record_effect": get_tool("record_effect")})
    assert effect_count("crash-1") == 1
    Run.objects.filter(pk=run.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    settings.CELERY_BROKER_URL = ""
    outcome = run_advance(run_id=run.id, worker="survivor")  # takes the run over
    assert outcome.status == RunStatus.SUCCEEDED
    assert effect_count("crash-1") == 1  # the stored result was reused
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["result"]["marker"] == "crash-1"


def test_bad_arguments_are_refused_at_once_and_nobody_is_asked(user, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": ""}), text("Oops."))
    run = start(user)
    assert run.status == RunStatus.SUCCEEDED
    assert not InboxItem.objects.exists()
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["error"]["code"] == "invalid_arguments"


def test_a_stopped_turn_closes_its_wait_and_a_decision_is_told_so(user, staff, team, asker):
    team.script("boss", tool_call("ask_human", {"question": "Still there?"}))
    run = start(user)
    item = InboxItem.objects.get(run=run)
    assert client(user).post(f"/api/v1/runs/{run.id}/cancel/").status_code == 202
    item.refresh_from_db()
    assert item.status == ItemStatus.CANCELLED  # at once, not at the next sweep
    message = ChatMessage.objects.get(run=run, role=MessageRole.TOOL)
    assert message.tool["human"]["status"] == "cancelled" and message.status == "cancelled"
    response = decide(client(staff), item.id, decision="approve", answer="yes")
    assert response.status_code == 409 and response.json()["error"]["code"] == "already_decided"
    item.refresh_from_db()
    assert item.status == ItemStatus.CANCELLED
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
