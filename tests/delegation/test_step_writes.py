"""A run's writes that ride on another: an answer needing no check is saved as the run's end in
its step's own (fenced) write, and an ended expert's result collected by its caller is saved with
the caller's next write; a crash or a lost lease in between loses nothing and repeats nothing."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import ChatMessage, MessageRole, MessageStatus
from delegation.models import Run, RunStatus
from delegation.steps import step
from delegation.steps.runner import run_advance
from delegation.tree.budget import budget_tokens_used
from delegation.usage.models import UsageRecord
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run
from tests.factories import make_agent
from tests.fake_openai import delegate, text

pytestmark = pytest.mark.django_db(transaction=True)


def run_updates(queries: list[dict]) -> list[str]:
    """The UPDATEs of runs, each as the columns it sets (its SET clause, up to WHERE)."""
    return [
        q["sql"].split(" SET ", 1)[1].split(" WHERE ", 1)[0]
        for q in queries
        if q["sql"].startswith('UPDATE "delegation_run"')
    ]


@pytest.fixture
def agent(fake_openai):
    return make_agent("worker", provider="openai", model="fake-model", max_steps=4)


def test_an_answer_needing_no_check_is_saved_as_the_runs_end_in_its_steps_write(
    user, agent, fake_openai
):
    fake_openai.script(text("The ", "answer."))
    run = start_run(user, agent)
    with CaptureQueriesContext(connection) as captured:
        assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    updates = run_updates(captured.captured_queries)
    # The routing decision's save is the run's only progress write; the answer is its end.
    assert sum('"routing"' in u for u in updates) == 1, updates
    assert sum('"answer"' in u for u in updates) == 1, updates
    run.refresh_from_db()
    usage = UsageRecord.objects.get(run=run)
    assert (run.status, run.answer, run.steps) == (RunStatus.SUCCEEDED, "The answer.", 1)
    assert run.transcript[-1] == {"role": "assistant", "content": "The answer."}
    tokens = usage.prompt_tokens + usage.completion_tokens
    assert budget_tokens_used(root_id=run.pk) == tokens > 0  # the turn's: its ledger's
    assert run.lease_token is not None and run.lease_expires_at is None
    message = ChatMessage.objects.get(run=run, role=MessageRole.AGENT)
    assert (message.content, message.status) == ("The answer.", MessageStatus.COMPLETED)


def test_an_answer_whose_run_was_taken_over_meanwhile_ends_nothing(
    user, agent, fake_openai, monkeypatch
):
    """The end is fenced like any step: the message's end is not kept (the new worker redoes
    the step under the same message id), the run goes on under its new worker, and only the
    call's cost stays on record."""
    fake_openai.script(text("Too ", "late."))
    run = start_run(user, agent)
    checks_to_rate = step._checks_to_rate
    new_token = uuid.uuid4()

    def taken_over_first(run_):
        Run.objects.filter(pk=run_.pk).update(lease_token=new_token)
        return checks_to_rate(run_)

    monkeypatch.setattr(step, "_checks_to_rate", taken_over_first)
    assert run_advance(run_id=run.id).status == "stopped"
    run.refresh_from_db()
    assert (run.status, run.lease_token, run.answer, run.steps) == (
        RunStatus.RUNNING,
        new_token,
        "",
        0,
    )
    assert not ChatMessage.objects.filter(run=run, role=MessageRole.AGENT).exists()
    assert UsageRecord.objects.filter(run=run).count() == 1


def test_a_checked_answer_is_saved_before_its_check_and_ended_after_it(user, fake_openai):
    checked = make_agent("checked", provider="openai", model="fake-model", validate_answers="rules")
    fake_openai.script(text("A checked ", "answer."))
    run = start_run(user, checked)
    with CaptureQueriesContext(connection) as captured:
        assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    updates = run_updates(captured.captured_queries)
    assert sum('"routing"' in u for u in updates) == 2, updates  # routing, then the step
    run.refresh_from_db()
    assert run.validation["valid"] is True and run.answer == "A checked answer."


class WorkerDied(BaseException):
    """The process ends mid-delivery (nothing of the run's code can catch it)."""


@pytest.fixture
def lead_and_expert(settings, team, user):
    """lead → expert, tasks inline: the expert runs and ends while its caller's delivery goes
    on, which then collects its result."""
    settings.TASKS_RUN_SYNC = True
    agents = make_team(lead=["expert"], expert=[])
    team.script("lead", delegate("expert", "What is the Q3 budget?"), text("Finance: 60."))
    team.script("expert", text("The Q3 budget ", "is 60."))
    return start_run(user, agents["lead"], "Q3 budget?")


def test_an_experts_result_lost_in_a_crash_is_collected_again_once(
    lead_and_expert, team, monkeypatch
):
    lead = lead_and_expert
    model_call = step._call_model

    def dies_before_the_leads_second_call(delivery, *args):
        if delivery.run.pk == lead.pk and delivery.run.steps == 1:
            raise WorkerDied
        return model_call(delivery, *args)

    monkeypatch.setattr(step, "_call_model", dies_before_the_leads_second_call)
    with pytest.raises(WorkerDied):
        run_advance(run_id=lead.id)
    lead.refresh_from_db()
    expert = Run.objects.get(parent=lead)
    assert expert.status == RunStatus.SUCCEEDED and lead.status == RunStatus.RUNNING
    # The result was read, not saved: the saved transcript still asks the expert.
    assert [m["role"] for m in lead.transcript] == ["user", "assistant"]

    monkeypatch.setattr(step, "_call_model", model_call)
    Run.objects.filter(pk=lead.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_advance(run_id=lead.id).status == RunStatus.SUCCEEDED
    lead.refresh_from_db()
    assert [m["role"] for m in lead.transcript] == ["user", "assistant", "tool", "assistant"]
    sent = team.requests["lead"][-1]["messages"]
    results = [json.loads(m["content"]) for m in sent if m["role"] == "tool"]
    assert results == [
        {"ok": True, "result": {"agent": "Expert", "answer": "The Q3 budget is 60."}}
    ]
    assert lead.answer == "Finance: 60." and len(team.requests["expert"]) == 1
    report = ChatMessage.objects.get(run=lead, role=MessageRole.TOOL)
    assert report.status == MessageStatus.COMPLETED and report.tool["ok"] is True


def transactions(queries: list[dict]) -> list[list[dict]]:
    """The statements of each transaction, BEGIN to COMMIT (or to the end of `queries`: a
    commit is not always among them)."""
    found, current = [], None
    for q in queries:
        if q["sql"].startswith("BEGIN"):
            current = []
        elif q["sql"].startswith("COMMIT") and current is not None:
            found.append(current)
            current = None
        elif current is not None:
            current.append(q)
    return found if current is None else [*found, current]


def test_a_step_that_only_asks_experts_is_one_commit_with_their_runs_and_its_wait(
    lead_and_expert, settings, monkeypatch
):
    """The caller's delivery, its expert not run: the step's ledger row, the expert's run and
    message, and the caller's wait (which saves the step) commit together."""
    from config import enqueue

    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = ""
    sent = []
    monkeypatch.setattr(enqueue, "_publish", lambda task, args: sent.append(args))
    lead = lead_and_expert
    with CaptureQueriesContext(connection) as captured:
        assert run_advance(run_id=lead.id).status == RunStatus.WAITING
    (step,) = [
        t
        for t in transactions(captured.captured_queries)
        if any(q["sql"].startswith('INSERT INTO "usage_usagerecord"') for q in t)
    ]
    inserts = [q["sql"].split()[2] for q in step if q["sql"].startswith("INSERT")]
    # The ledger row, the expert's run, its message, the activity row: one commit.
    assert inserts == [
        '"usage_usagerecord"',
        '"delegation_run"',
        '"chat_chatmessage"',
        '"humans_activity"',
    ]
    updates = run_updates(step)
    # No progress write before the wait: the wait saves the step.
    assert not any('"routing"' in u for u in updates), updates
    assert any('"waiting_since"' in u for u in updates), updates
    lead.refresh_from_db()
    expert = Run.objects.get(parent=lead)
    assert lead.status == RunStatus.WAITING and lead.steps == 1 and lead.lease_token is None
    assert budget_tokens_used(root_id=lead.pk) > 0  # the step's ledger row, in its commit
    assert sent == [(str(expert.id),)] and expert.status == RunStatus.QUEUED


def test_a_step_asking_an_expert_of_a_run_taken_over_meanwhile_starts_nothing(
    lead_and_expert, monkeypatch
):
    lead = lead_and_expert
    stream = step._stream
    new_token = uuid.uuid4()

    def taken_over_after_the_call(*args):
        streamed = stream(*args)
        Run.objects.filter(pk=lead.pk).update(lease_token=new_token)
        return streamed

    monkeypatch.setattr(step, "_stream", taken_over_after_the_call)
    assert run_advance(run_id=lead.id).status == "stopped"
    lead.refresh_from_db()
    assert (lead.status, lead.lease_token, lead.steps) == (RunStatus.RUNNING, new_token, 0)
    assert [m["role"] for m in lead.transcript] == ["user"]
    assert not Run.objects.filter(parent=lead).exists()
    assert not ChatMessage.objects.filter(run=lead, role=MessageRole.TOOL).exists()
    assert UsageRecord.objects.filter(run=lead).count() == 1  # the call's cost stays on record
