"""A delegation is checked against the expert as it is when asked, not as the model was offered
it: an expert an admin disabled, restricted, edited or gave knowledge meanwhile is refused or
runs as it is now, and the turn's budget is taken once (delegation.tree._checked_and_taken)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.contrib.auth.models import Group

from agents.knowledge.services import knowledge_base_create
from agents.models import Agent
from agents.services import agent_revision_record
from delegation.models import Run
from delegation.runs.emitter import RunEmitter
from delegation.tree.ask import delegation_begin
from delegation.tree.guards import delegation_targets
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def offered(user):
    """A lead whose delivery was offered its expert, finance (as its model request reads)."""
    agents = make_team(lead=["finance"], finance=[])
    run = start_run(user, agents["lead"])
    run = Run.objects.select_related("user", "root").get(pk=run.pk)
    assert [a.name for a in delegation_targets(caller=run)] == ["finance"]
    return run


def ask(run: Run, target: str = "finance") -> str | None:
    """The lead asks `target`: None when the expert starts, else the refusal it reads."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "delegate", "arguments": json.dumps({"target": target, "task": "q"})},
    }
    emitter = RunEmitter(run)
    return delegation_begin(
        caller=run, emitter=emitter, call=call, message_id=uuid.uuid4(), hand_over=None
    )


def refusal_code(result: str | None) -> str:
    assert result is not None, "the expert was asked"
    return json.loads(result)["error"]["code"]


def test_an_expert_unchanged_since_its_offer_is_asked_and_taken_once(offered):
    assert ask(offered) is None
    child = Run.objects.get(parent=offered)
    assert child.agent_config["name"] == "finance"
    assert Run.objects.get(pk=offered.pk).tree_delegations == 1


def test_an_expert_disabled_after_its_offer_is_refused_and_takes_nothing(offered):
    Agent.objects.filter(name="finance").update(enabled=False)  # no save: only the row says
    assert refusal_code(ask(offered)) == "delegation_unavailable"
    root = Run.objects.get(pk=offered.pk)
    assert (root.tree_delegations, Run.objects.filter(parent=offered).count()) == (0, 0)


def test_an_expert_restricted_after_its_offer_is_refused_for_a_user_outside_the_group(offered):
    finance = Agent.objects.get(name="finance")
    finance.access_group = Group.objects.create(name="finance-team")
    finance.save()
    agent_revision_record(agent=finance)
    assert refusal_code(ask(offered)) == "delegation_forbidden"
    assert Run.objects.filter(parent=offered).count() == 0


def test_an_expert_edited_after_its_offer_runs_as_it_is_now(offered):
    finance = Agent.objects.get(name="finance")
    finance.system_prompt = "You are finance, edited."
    finance.save()  # a plain save, no revision: `updated_at` still tells
    assert ask(offered) is None
    child = Run.objects.get(parent=offered)
    assert child.agent_config["system_prompt"] == "You are finance, edited."
    assert Run.objects.get(pk=offered.pk).tree_delegations == 1  # taken once


def test_a_spent_budget_is_still_refused_as_a_budget(offered, settings):
    Run.objects.filter(pk=offered.pk).update(tree_delegations=settings.TURN_MAX_DELEGATIONS)
    assert refusal_code(ask(offered)) == "delegation_budget"
    assert Run.objects.filter(parent=offered).count() == 0


def test_an_expert_not_in_the_offer_is_read_and_checked(offered):
    assert refusal_code(ask(offered, "ghost")) == "delegation_unknown_target"
    assert refusal_code(ask(offered, "lead")) == "delegation_not_allowed"


def test_an_expert_given_knowledge_after_its_offer_runs_with_it(offered):
    """Linking a knowledge base bumps no revision: the expert is read when asked, with its kb
    tools."""
    knowledge_base_create(name="finance-kb", agents=[Agent.objects.get(name="finance")])
    assert ask(offered) is None
    child = Run.objects.get(parent=offered)
    assert {"kb_search", "kb_documents"} <= set(child.agent_config["tool_keys"])
    assert Run.objects.get(pk=offered.pk).tree_delegations == 1  # taken once
