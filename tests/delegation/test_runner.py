"""The run loop: tool loop, step limit, model failures, bad tool calls, duplicates, cancel."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageRole, MessageStatus
from delegation.models import Run, RunStatus
from delegation.runs.claim import run_claim
from delegation.runs.create import run_create
from delegation.runs.ending import run_stop
from delegation.runs.writes import RunStopped, run_save_progress
from delegation.steps.runner import run_advance
from delegation.usage.models import UsageRecord
from tests.factories import make_agent
from tests.fake_openai import Reply, error, text, tool_call

pytestmark = pytest.mark.django_db


def start_run(user, agent, question: str = "question") -> Run:
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    return run_create(
        agent=agent,
        user=user,
        session=session,
        task=question,
        transcript=[{"role": "user", "content": question}],
    )


@pytest.fixture
def agent(fake_openai):
    return make_agent(
        "worker", provider="openai", model="fake-model", tool_keys=["calculate"], max_steps=4
    )


def test_tool_loop_runs_tool_and_feeds_result_back(user, agent, fake_openai):
    fake_openai.script(tool_call("calculate", {"expression": "2+3"}, split=4), text("It is 5."))
    run = start_run(user, agent)
    assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    run.refresh_from_db()
    assert run.answer == "It is 5." and run.steps == 2
    assert run.steps == 2 and run.usage["total_tokens"] == 36
    tool_message = fake_openai.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"]) == {
        "ok": True,
        "result": {"expression": "2+3", "value": 5},
    }
    roles = list(ChatMessage.objects.filter(run=run).values_list("role", flat=True))
    assert roles == [MessageRole.TOOL, MessageRole.AGENT]


def test_step_limit_makes_last_call_without_tools_so_the_run_still_answers(user, fake_openai):
    agent = make_agent("looper", provider="openai", model="m", tool_keys=["calculate"], max_steps=2)
    fake_openai.fallback = lambda body: (
        tool_call("calculate", {"expression": "1+1"}) if body.get("tools") else text("Final.")
    )
    run = start_run(user, agent)
    run_advance(run_id=run.id)
    run.refresh_from_db()
    assert len(fake_openai.requests) == 2
    assert "tools" in fake_openai.requests[0] and "tools" not in fake_openai.requests[1]
    assert run.status == RunStatus.SUCCEEDED and run.answer == "Final."


def test_max_steps_one_answers_without_tools(user, fake_openai):
    agent = make_agent("once", provider="openai", model="m", tool_keys=["calculate"], max_steps=1)
    fake_openai.fallback = lambda body: text("Only answer.")
    run = start_run(user, agent)
    run_advance(run_id=run.id)
    assert len(fake_openai.requests) == 1 and "tools" not in fake_openai.requests[0]


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (error(500), "model_unavailable"),
        (error(400, "bad model"), "model_error"),
        (Reply(stall_seconds=2), "model_timeout"),
        (Reply(malformed=True), "model_error"),
    ],
)
def test_model_failure_fails_the_run_and_tells_the_user_plainly(
    user, agent, fake_openai, settings, reply, code
):
    # Short only where the timeout is the point: a busy machine may take longer than that to
    # read the other failures.
    settings.OPENAI_TIMEOUT = 0.5 if code == "model_timeout" else 10
    fake_openai.script(reply)
    run = start_run(user, agent)
    assert run_advance(run_id=run.id).status == RunStatus.FAILED
    run.refresh_from_db()
    assert run.error["code"] == code and run.finished_at is not None
    failure = ChatMessage.objects.get(run=run, status=MessageStatus.FAILED)
    assert failure.content.startswith("Sorry, I could not finish this: ")
    assert failure.agent["name"] == "worker"


def test_malformed_tool_arguments_become_an_error_the_model_can_correct(user, agent, fake_openai):
    fake_openai.script(
        tool_call("calculate", '{"expression": "1+', split=2),
        tool_call("calculate", {"expression": "1+1"}),
        text("2"),
    )
    run = start_run(user, agent)
    run_advance(run_id=run.id)
    run.refresh_from_db()
    first_result = json.loads(fake_openai.requests[1]["messages"][-1]["content"])
    assert first_result["ok"] is False and first_result["error"]["code"] == "invalid_json"
    assert run.status == RunStatus.SUCCEEDED and run.answer == "2"
    tools = ChatMessage.objects.filter(run=run, role=MessageRole.TOOL).order_by("created_at")
    assert [t.tool["ok"] for t in tools] == [False, True]


def test_schema_violation_is_reported_not_executed(user, agent, fake_openai):
    fake_openai.script(tool_call("calculate", {"expr": "1"}), text("sorry"))
    run = start_run(user, agent)
    run_advance(run_id=run.id)
    result = json.loads(fake_openai.requests[1]["messages"][-1]["content"])
    assert (
        result["error"]["code"] == "invalid_arguments"
        and "expression" in result["error"]["message"]
    )


@pytest.mark.parametrize(
    "name", ["rm_rf", "search_my_chats"]
)  # unknown, and registered but not granted
def test_tool_not_on_the_agents_list_is_refused_with_the_list(user, agent, fake_openai, name):
    fake_openai.script(tool_call(name, {"query": "secret"}), text("ok"))
    run = start_run(user, agent)
    run_advance(run_id=run.id)
    result = json.loads(fake_openai.requests[1]["messages"][-1]["content"])
    assert result["error"]["code"] == "unknown_tool"
    assert "Available: calculate" in result["error"]["message"]
    assert Run.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED


def test_duplicate_delivery_of_a_finished_run_is_a_no_op(user, agent, fake_openai):
    fake_openai.script(text("done"))
    run = start_run(user, agent)
    run_advance(run_id=run.id)
    messages = ChatMessage.objects.count()
    assert run_advance(run_id=run.id).status == "noop"
    assert len(fake_openai.requests) == 1 and ChatMessage.objects.count() == messages


def test_delivery_while_another_worker_holds_the_lease_asks_to_retry_later(user, agent):
    run = start_run(user, agent)
    claimed, _ = run_claim(run_id=run.id)
    assert claimed is not None
    outcome = run_advance(run_id=run.id)
    assert outcome.status == "busy" and outcome.retry_in > 1


def test_expired_lease_is_taken_over(user, agent, fake_openai):
    fake_openai.script(text("recovered"))
    run = start_run(user, agent)
    run_claim(run_id=run.id)
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED


def test_resumed_run_does_not_repeat_tools_already_answered(user, agent, fake_openai):
    """A worker that died after a tool ran resumes from the saved transcript."""
    run = start_run(user, agent)
    run.transcript = [
        *run.transcript,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "calculate", "arguments": '{"expression": "1+1"}'},
                },
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "calculate", "arguments": '{"expression": "2+2"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": '{"ok": true}'},
    ]
    run.steps = 1
    run.save()
    fake_openai.script(text("both done"))
    run_advance(run_id=run.id)
    sent = fake_openai.requests[0]["messages"]
    assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == ["a", "b"]
    assert json.loads(sent[-1]["content"])["result"]["value"] == 4


@pytest.mark.django_db(transaction=True)  # the fake server's thread cancels on its own connection
def test_cancel_while_the_model_is_working_stops_before_any_tool_runs(user, agent, fake_openai):
    run = start_run(user, agent)

    def cancel_then_call_tool(body):
        run_stop(run=Run.objects.get(pk=run.pk))
        connection.close()  # this thread's connection would outlive the test database
        return tool_call("calculate", {"expression": "1+1"})

    fake_openai.fallback = cancel_then_call_tool
    assert run_advance(run_id=run.id).status == "stopped"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and len(fake_openai.requests) == 1
    assert not ChatMessage.objects.filter(run=run, role=MessageRole.TOOL).exists()


@pytest.mark.django_db(transaction=True)  # the fake server's thread cancels on its own connection
def test_a_call_whose_run_was_stopped_meanwhile_is_still_on_the_ledger(user, agent, fake_openai):
    """The step's commit (ledger row, message end, progress) is refused to a lost run, but the
    call was made: its tokens and cost are written all the same, and nothing else is."""
    run = start_run(user, agent)

    def cancel_then_answer(body):
        run_stop(run=Run.objects.get(pk=run.pk))
        connection.close()  # this thread's connection would outlive the test database
        return text("An answer nobody will see.")

    fake_openai.fallback = cancel_then_answer
    assert run_advance(run_id=run.id).status == "stopped"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.steps == 0
    (row,) = UsageRecord.objects.filter(run_id=run.pk)
    assert row.step == 0 and row.prompt_tokens + row.completion_tokens > 0
    assert not ChatMessage.objects.filter(run=run, content__contains="nobody").exists()


def test_cancelled_run_cannot_save_progress(user, agent):
    run = start_run(user, agent)
    claimed = run_claim(run_id=run.id)[0].run
    assert run_stop(run=claimed) is True
    with pytest.raises(RunStopped):
        run_save_progress(run=claimed)
    assert run_stop(run=claimed) is False  # already ended


def test_run_past_its_deadline_times_out(user, agent, fake_openai):
    run = start_run(user, agent)
    Run.objects.filter(pk=run.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    assert run_advance(run_id=run.id).status == RunStatus.TIMED_OUT
    assert not fake_openai.requests
    assert Run.objects.get(pk=run.pk).error["code"] == "run_timeout"


def test_agent_edits_take_effect_on_the_next_run_not_the_current(user, agent, fake_openai):
    run = start_run(user, agent)
    agent.system_prompt = "You are changed."
    agent.save()
    fake_openai.script(text("a"), text("b"))
    run_advance(run_id=run.id)
    prompt = fake_openai.requests[0]["messages"][0]["content"]
    assert prompt.split("\n\n")[0] == "You are worker."  # (the platform's rules follow)
    next_run = start_run(user, agent)
    run_advance(run_id=next_run.id)
    assert fake_openai.requests[1]["messages"][0]["content"].split("\n\n")[0] == "You are changed."


def test_an_answer_whose_step_could_not_be_saved_is_kept_and_closed_with_the_failed_run(
    user, agent, fake_openai, monkeypatch
):
    """The database refuses the step's commit (message end, ledger, progress): the words the
    page was shown are saved all the same, and the run's end closes them as failed."""
    from django.db import DatabaseError

    from delegation.steps import step

    def refuse(*args, **kwargs):
        raise DatabaseError("disk I/O error")

    # The step's save: its progress, or (an answer needing no check) the run's end.
    monkeypatch.setattr(step, "save_progress", refuse)
    monkeypatch.setattr(step, "run_finish", refuse)
    fake_openai.script(text("Half ", "an answer"))
    run = start_run(user, agent)
    assert run_advance(run_id=run.id).status == RunStatus.FAILED
    kept = ChatMessage.objects.get(run=run, content="Half an answer")
    assert kept.status == MessageStatus.FAILED
