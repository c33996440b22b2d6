"""A model call taken from the turn's budget before it is made (a turn's first, when it is created;
an expert's first, with its delegation; its caller's next, with the first delegation of a step)
is counted once, counted again when a dead worker may have made it, and still bound by what
the turn has left."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from delegation.models import Run, RunStatus
from delegation.runs.claim import run_claim
from delegation.steps.runner import run_advance
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run
from tests.factories import make_agent
from tests.fake_openai import delegate, text, tool_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(fake_openai):
    return make_agent("worker", provider="openai", model="fake-model", tool_keys=["calculate"])


def test_a_new_turn_has_its_first_call_taken_and_its_answer_takes_no_other(
    user, agent, fake_openai
):
    fake_openai.script(text("done"))
    run = start_run(user, agent)
    assert (run.tree_model_calls, run.reserved_call) == (1, 0)
    with CaptureQueriesContext(connection) as captured:
        assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    assert Run.objects.get(pk=run.pk).tree_model_calls == 1
    assert not [q for q in captured.captured_queries if 'SET "tree_model_calls"' in q["sql"]]


def test_a_first_call_a_dead_worker_may_have_made_is_counted_again(user, agent, fake_openai):
    fake_openai.script(text("recovered"))
    run = start_run(user, agent)
    run_claim(run_id=run.id)  # a worker claims it and dies before its step is saved
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    assert Run.objects.get(pk=run.pk).tree_model_calls == 2


def test_a_takeover_keeps_a_reserved_call_its_pending_tool_calls_come_before(user, agent):
    """A step's calls still without a result come before the call reserved for the step
    after them: a dead worker cannot have made it, so a takeover keeps it (and one with no call
    pending clears it: it may have been made)."""
    run = start_run(user, agent)
    call = {"id": "c1", "type": "function", "function": {"name": "calculate", "arguments": "{}"}}
    waiting_on_a_tool = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    for transcript, kept in ((waiting_on_a_tool, 1), ([{"role": "user", "content": "q"}], None)):
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.RUNNING,
            steps=1,
            reserved_call=1,
            transcript=transcript,
            lease_expires_at=timezone.now() - timedelta(seconds=1),
        )
        claimed, _ = run_claim(run_id=run.id)
        assert claimed.taken_over and claimed.run.reserved_call == kept


def test_a_reserved_first_call_still_answers_when_the_turn_has_no_other(user, agent, fake_openai):
    """The turn's last call offers no tools, reserved or not."""
    fake_openai.script(text("short"))
    run = start_run(user, agent)
    budget = {**run.budget, "max_model_calls": 1}
    Run.objects.filter(pk=run.pk).update(budget=budget)
    assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    assert "tools" not in fake_openai.requests[0]


def test_a_later_call_is_taken_when_it_is_made(user, agent, fake_openai):
    fake_openai.script(tool_call("calculate", {"expression": "1+1"}), text("2"))
    run = start_run(user, agent)
    assert run_advance(run_id=run.id).status == RunStatus.SUCCEEDED
    assert Run.objects.get(pk=run.pk).tree_model_calls == 2


@pytest.mark.django_db(transaction=True)
def test_a_delegation_takes_its_expert_s_first_call_and_its_caller_s_next(user, team, settings):
    """Lead asks one expert and answers from it: three calls, each taken once, none by a
    statement of its own."""
    settings.TASKS_RUN_SYNC = True
    agents = make_team(lead=["expert"], expert=[])
    team.script("lead", delegate("expert", "What is the Q3 budget?"), text("Finance: 60."))
    team.script("expert", text("60."))
    run = start_run(user, agents["lead"], "Q3 budget?")
    with CaptureQueriesContext(connection) as captured:
        run_advance(run_id=run.id)
    run.refresh_from_db()
    assert (run.status, run.answer, run.tree_model_calls) == (
        RunStatus.SUCCEEDED,
        "Finance: 60.",
        3,
    )
    assert run.reserved_call == 1  # its second call (step 1), taken with its delegation
    assert not [q for q in captured.captured_queries if 'SET "tree_model_calls"' in q["sql"]]


def busy(body: dict) -> object:
    """An expert that uses a tool as long as it is offered tools, then answers."""
    offered = {tool["function"]["name"] for tool in body.get("tools", [])}
    return tool_call("calculate", {"expression": "1+1"}) if "calculate" in offered else text("ok")


def asks(target: str):
    """A caller that asks `target` for its question, then answers from the result."""

    def reply(body: dict) -> object:
        last = body["messages"][-1]
        return delegate(target, "work it out") if last["role"] == "user" else text("done")

    return reply


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("depth", "deepest_calls"),
    [
        # 8 calls: the lead's two, and the rest for its expert (6, the last without tools).
        (1, 6),
        # 8 calls: the lead's two, the middle expert's two, the rest for the deepest (4).
        (2, 4),
    ],
)
def test_a_turn_s_experts_use_every_call_its_budget_has_and_each_caller_answers(
    user, team, settings, depth, deepest_calls
):
    settings.TASKS_RUN_SYNC = True
    settings.TURN_MAX_MODEL_CALLS = 8
    names = ["lead", "mid", "leaf"][: depth + 1]
    agents = make_team(**{name: names[i + 1 : i + 2] for i, name in enumerate(names)})
    type(agents["lead"]).objects.filter(name=names[-1]).update(tool_keys=["calculate"])
    for caller, target in zip(names, names[1:], strict=False):
        team.always[caller] = asks(target)
    team.always[names[-1]] = busy
    run = start_run(user, agents["lead"], "Work hard.")
    run_advance(run_id=run.id)
    run.refresh_from_db()
    assert (run.status, run.answer) == (RunStatus.SUCCEEDED, "done")
    deepest = team.requests[names[-1]]
    assert len(deepest) == deepest_calls
    assert ["tools" in body for body in deepest] == [True] * (deepest_calls - 1) + [False]
    assert run.tree_model_calls == 8
    assert sum(len(team.requests[name]) for name in names) == 8
