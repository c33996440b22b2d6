"""A suite on a draft (the entry agent's or an expert's) against the published version, on an
older revision, and on another model: drafts are pinned on the turn's runs, never saved."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from agents.models import Agent
from agents.services import agent_save, agent_snapshot
from delegation.evals.models import CaseStatus, EvalRun
from delegation.evals.overrides import config_from_snapshot
from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent
from tests.fake_openai import Team, delegate, text


def _relay(body: dict[str, Any]) -> Any:
    """The entry agent: ask finance, then repeat its answer."""
    last = body["messages"][-1]
    if last["role"] != "tool":
        return delegate("finance", "the numbers?")
    return text("Relayed: " + json.loads(last["content"])["result"]["answer"])


@pytest.fixture
def team(fake_openai, db) -> Team:
    """assistant → finance on the fake server; finance v1 and a v2 prompt answer differently."""
    finance = make_agent("finance", provider="openai", model="fake-model")
    make_agent(
        "assistant", provider="openai", model="fake-model", is_entry=True, subagents=[finance]
    )
    team = Team(fake_openai)
    team.always["assistant"] = _relay
    team.always["finance"] = lambda body: text("finance v1 answer")
    team.always["finance-v2"] = lambda body: text("finance v2 answer")
    team.always["assistant-v2"] = lambda body: text("assistant v2 answers itself")
    return team


def draft_of(name: str, **changes: Any) -> dict[str, Any]:
    """Overrides pinning a draft of agent `name` with `changes`."""
    agent = Agent.objects.get(name=name)
    snapshot = {**agent_snapshot(agent=agent), **changes}
    return {"agents": {name: config_from_snapshot(agent=agent, snapshot=snapshot)}}


def suite_expecting(words: str) -> Any:
    suite = make_suite(Agent.objects.get(name="assistant"))
    make_case(suite, "How are the numbers?", expect={"answer_contains": [words]})
    return suite


@pytest.mark.django_db(transaction=True)
def test_an_experts_draft_passes_where_the_published_version_fails(team):
    suite = suite_expecting("finance v2 answer")
    published = run_suite(suite)
    drafted = run_suite(suite, overrides=draft_of("finance", system_prompt="You are finance-v2."))
    assert (published.succeeded, drafted.succeeded) == (False, True)
    result = drafted.results.get()
    assert result.evidence["answer"] == "Relayed: finance v2 answer"
    assert [n["agent"] for n in result.evidence["tree"]] == ["assistant", "finance"]
    finance = Agent.objects.get(name="finance")  # the live row never saw the draft
    assert (finance.system_prompt, finance.version) == ("You are finance.", 1)
    assert len(team.requests["finance"]) == 1 and len(team.requests["finance-v2"]) == 1


@pytest.mark.django_db(transaction=True)
def test_the_entry_agents_draft_is_pinned_on_the_root_run(team):
    suite = suite_expecting("assistant v2 answers itself")
    overrides = draft_of("assistant", system_prompt="You are assistant-v2.", allowed_subagents=[])
    run = run_suite(suite, overrides=overrides, target="draft of assistant")
    result = run.results.get()
    assert run.succeeded and result.evidence["experts"] == []
    assert run.target == "draft of assistant, each agent's own model"
    assert Agent.objects.get(name="assistant").system_prompt == "You are assistant."


@pytest.mark.django_db(transaction=True)
def test_an_older_revision_runs_as_it_was(team):
    finance = Agent.objects.get(name="finance")
    agent_save(agent=finance, data={"system_prompt": "You are finance-v2."}, gated=False)
    suite = suite_expecting("finance v2 answer")
    assert run_suite(suite).succeeded  # v2 is live now
    old = run_suite(suite, revision=finance.revisions.get(version=1))
    assert not old.succeeded and old.target.startswith("finance v1")
    assert old.results.get().evidence["answer"] == "Relayed: finance v1 answer"


@pytest.mark.django_db(transaction=True)
def test_run_evals_agent_version_runs_the_suites_agent_at_that_version(team):
    assistant = Agent.objects.get(name="assistant")
    agent_save(agent=assistant, data={"system_prompt": "You are assistant-v2."}, gated=False)
    suite = suite_expecting("finance v1 answer")
    out = StringIO()
    call_command("run_evals", suite.name, "--agent-version", "1", stdout=out)
    assert "1/1 passed" in out.getvalue()
    assert EvalRun.objects.get().target.startswith("assistant v1")


@pytest.mark.django_db(transaction=True)
def test_a_model_override_reaches_every_run_of_the_turn(team):
    suite = suite_expecting("[offline model]")
    run = run_suite(suite, model="offline")
    result = run.results.get()
    assert run.succeeded and result.status == CaseStatus.PASSED
    assert {n["model"] for n in result.evidence["tree"]} == {"offline"}
    assert team.requests == {}  # no call reached the server
