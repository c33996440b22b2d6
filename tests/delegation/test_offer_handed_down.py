"""An expert's offer is read by its caller's, a level below in the same statement, and kept for
it: its first delivery in that process reads no experts, and is offered exactly what its own
read would offer (delegation.guards.delegation_offer_hand_down)."""

from __future__ import annotations

import copy
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from agents.services import agent_revision_record
from delegation.guards import (
    _CANDIDATES,
    _names,
    _offer,
    delegation_offer_hand_down,
    delegation_targets,
)
from delegation.models import Run
from delegation.services import pinned_config
from tests.delegation.conftest import make_team
from tests.delegation.test_ask_as_offered import agent_reads, ask
from tests.delegation.test_runner import start_run

pytestmark = pytest.mark.django_db


def lead_offered(user, **team: list[str]) -> Run:
    """The team's lead, its delivery offered its experts (as its model request reads them)."""
    agents = make_team(**team)
    run = start_run(user, agents["lead"])
    run = Run.objects.select_related("user", "root").get(pk=run.pk)
    with CaptureQueriesContext(connection) as captured:
        delegation_targets(caller=run)
    assert agent_reads(captured) == 1  # its experts and theirs, in one statement
    return called(run)


def called(run: Run) -> Run:
    """The run after the model call its offer was read for (counted before it asks)."""
    run.steps += 1
    return run


def asked(lead: Run) -> Run:
    return Run.objects.select_related("user", "root").get(parent=lead)


def offered_by_its_own_read(run: Run) -> list[dict]:
    """What the run's own read of its experts would offer it now."""
    return [pinned_config(a) for a in _CANDIDATES.rows(_names(run))]


def test_an_expert_asked_is_offered_its_experts_as_its_caller_read_them_with_no_read(user):
    lead = lead_offered(user, lead=["mid"], mid=["leaf", "tax"], leaf=[], tax=[])
    assert ask(lead, "mid") is None
    mid = asked(lead)
    with CaptureQueriesContext(connection) as captured:
        targets = delegation_targets(caller=mid)
    assert agent_reads(captured) == 0
    assert [a.name for a in targets] == ["leaf", "tax"]
    assert [pinned_config(a) for a in targets] == offered_by_its_own_read(mid)


def test_what_is_handed_down_leaves_out_what_the_expert_s_own_read_leaves_out(user):
    agents = make_team(lead=["mid"], mid=["leaf", "off", "lead"], leaf=[], off=[])
    Agent.objects.filter(name="off").update(enabled=False)
    agents["mid"].allowed_subagents.add(make_agent_like(agents["leaf"], "hidden"))
    agent_revision_record(agent=agents["mid"])
    lead = start_run(user, agents["lead"])
    lead = Run.objects.select_related("user", "root").get(pk=lead.pk)
    delegation_targets(caller=lead)
    assert ask(called(lead), "mid") is None
    mid = asked(lead)
    assert set(mid.agent_config["allowed_subagents"]) == {"leaf", "off", "hidden", "lead"}
    with CaptureQueriesContext(connection) as captured:
        targets = delegation_targets(caller=mid)
    assert agent_reads(captured) == 0
    # Not the disabled one, not one no one may ask, not its own caller (a cycle).
    assert [a.name for a in targets] == ["leaf"]
    assert [pinned_config(a) for a in targets] == offered_by_its_own_read(mid)


def make_agent_like(agent: Agent, name: str) -> Agent:
    """A copy of `agent` named `name` that may not be asked by anyone (not delegatable)."""
    return Agent.objects.create(
        name=name,
        display_name=name.title(),
        system_prompt=agent.system_prompt,
        provider=agent.provider,
        model=agent.model,
        delegatable=False,
    )


def test_an_expert_saved_since_its_caller_s_offer_reads_its_own(user):
    lead = lead_offered(user, lead=["mid"], mid=["leaf"], leaf=[])
    mid_agent = Agent.objects.get(name="mid")
    mid_agent.allowed_subagents.add(Agent.objects.create(name="tax", display_name="Tax"))
    mid_agent.save()  # a new expert for it, after the lead's read
    agent_revision_record(agent=mid_agent)
    assert ask(lead, "mid") is None  # pinned as it is now (read again)
    mid = asked(lead)
    with CaptureQueriesContext(connection) as captured:
        targets = delegation_targets(caller=mid)
    assert agent_reads(captured) == 1  # its own read: the lead's is of the agent as it was
    assert [a.name for a in targets] == ["leaf", "tax"]


def test_an_expert_disabled_after_it_was_handed_down_is_still_refused_when_asked(user):
    lead = lead_offered(user, lead=["mid"], mid=["leaf"], leaf=[])
    assert ask(lead, "mid") is None
    mid = asked(lead)
    with CaptureQueriesContext(connection) as captured:
        assert [a.name for a in delegation_targets(caller=mid)] == ["leaf"]
    assert agent_reads(captured) == 0  # handed down
    Agent.objects.filter(name="leaf").update(enabled=False)  # after the offer
    called(mid)
    refusal = ask(mid, "leaf")
    assert refusal is not None and '"delegation_unavailable"' in refusal
    assert Run.objects.filter(parent=mid).count() == 0


def test_a_caller_whose_experts_may_not_ask_further_reads_only_its_own_level(user):
    agents = make_team(lead=["mid"], mid=["leaf"], leaf=[])
    agents["lead"].max_depth = 1  # its experts may not ask further
    agents["lead"].save()
    lead = start_run(user, agents["lead"])
    lead = Run.objects.select_related("user", "root").get(pk=lead.pk)
    assert [a.name for a in delegation_targets(caller=lead)] == ["mid"]
    assert _offer(lead).below is None  # its experts' experts were not read
    assert ask(called(lead), "mid") is None
    mid = asked(lead)
    assert delegation_targets(caller=mid) == []  # it may not ask
    with CaptureQueriesContext(connection) as captured:
        assert [a.name for a in _offer(mid).experts] == ["leaf"]
    assert agent_reads(captured) == 1  # nothing was handed down: its own read


def test_an_offer_kept_from_an_earlier_step_is_not_handed_down(user):
    lead = lead_offered(user, lead=["mid"], mid=["leaf"], leaf=[])
    lead.steps += 1  # a later step, its offer kept from the first (delegation.per_run)
    assert ask(lead, "mid") is None
    mid = asked(lead)
    with CaptureQueriesContext(connection) as captured:
        assert [a.name for a in delegation_targets(caller=mid)] == ["leaf"]
    assert agent_reads(captured) == 1  # its own read, not one made a step (or minutes) ago


def test_an_expert_pinned_to_ask_others_than_its_agent_may_reads_its_own(user):
    lead = lead_offered(user, lead=["mid"], mid=["leaf"], leaf=[], tax=[])
    assert ask(lead, "mid") is None
    mid = asked(lead)
    # As an eval's draft of mid pins it (evals.overrides): tax too, which the agent may not ask.
    draft = copy.copy(mid)
    draft.pk = uuid.uuid4()
    draft.agent_config = {**mid.agent_config, "allowed_subagents": ["leaf", "tax"]}
    (offered,) = _offer(lead).experts
    delegation_offer_hand_down(caller=lead, child=draft, target=offered)
    with CaptureQueriesContext(connection) as captured:
        targets = delegation_targets(caller=draft)
    assert agent_reads(captured) == 1  # its own read: the lead's did not read tax
    assert [a.name for a in targets] == ["leaf", "tax"]
