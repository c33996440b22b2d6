"""Routing that learns: off reads nothing, advisory records the figures and changes nothing, on
breaks ties and asks an expert below the threshold after the alternatives; the router model
reads the figures as priors; every decision records what it used."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import Agent
from delegation.models import RunStatus
from delegation.routing.decide import RoutingInput, routing_decide
from delegation.routing.models import Learning, RoutingStat
from delegation.routing.seeds import routing_seed
from delegation.runs.spans import _routing_attributes
from delegation.turns import turn_start
from tests.factories import make_agent
from tests.fake_openai import text

pytestmark = pytest.mark.django_db

ENTRY = {"name": "assistant", "provider": "offline", "model": "", "tool_keys": []}


@pytest.fixture
def experts(db) -> list[Agent]:
    return [
        make_agent("finance", display_name="Finance", tags=["finance", "財務"]),
        make_agent("hr", display_name="HR", tags=["hr", "人資", "payroll"]),
    ]


def figures(expert: str, intent: str, *, turns: int, good: int, bad: int, entry="assistant"):
    RoutingStat.objects.create(
        entry=entry,
        expert=expert,
        intent=intent,
        day=timezone.now().date(),
        delegations=turns,
        succeeded=turns,
        validation_passed=good,
        validation_failed=bad,
    )


def policy(name: str, learning: str, **fields):
    chosen = routing_seed(name=name)
    chosen.learning = learning
    for field, value in fields.items():
        setattr(chosen, field, value)
    chosen.save()
    return chosen


def decide(chosen, words: str, targets, entry=ENTRY):
    return routing_decide(RoutingInput(text=words, policy=chosen, entry=entry, targets=targets))


TIE = "Can finance or hr tell me who approves this?"  # mentions both experts; no rule matches


def test_off_reads_no_figures_and_records_none(experts):
    figures("finance", "none", turns=10, good=1, bad=9)
    off = policy("site-assistant", Learning.OFF)
    with CaptureQueriesContext(connection) as plain:
        decision = decide(off, TIE, experts)
    assert decision.learning is None and decision.target == "finance"
    off.learning = Learning.ADVISORY
    off.save()
    with CaptureQueriesContext(connection) as advised:
        decide(off, TIE, experts)
    assert len(advised) == len(plain) + 1  # one indexed read of the figures, no more


def test_advisory_records_the_figures_and_changes_nothing(experts):
    figures("finance", "none", turns=10, good=1, bad=9)
    figures("hr", "none", turns=10, good=9, bad=1)
    decision = decide(policy("site-assistant", Learning.ADVISORY), TIE, experts)
    assert decision.target == "finance"  # the first mentioned, as without learning
    learning = decision.learning
    assert learning["mode"] == "advisory" and learning["changed"] == ""
    shown = {(f["expert"], f["intent"]): f for f in learning["figures"]}
    assert shown["finance", "none"]["rate"] == 10 and shown["finance", "none"]["below"]
    assert shown["hr", "none"]["rate"] == 90 and not shown["hr", "none"]["below"]


def test_on_breaks_a_tie_with_the_better_figures(experts):
    figures("finance", "none", turns=10, good=6, bad=4)
    figures("hr", "none", turns=10, good=9, bad=1)
    decision = decide(policy("site-assistant", Learning.ON), TIE, experts)
    assert decision.target == "hr"
    assert "HR" in decision.learning["changed"] and "HR" in decision.reason


def test_on_asks_an_expert_below_the_threshold_after_the_alternatives(experts):
    figures("finance", "finance", turns=12, good=4, bad=8)  # 33 %: below 50
    figures("hr", "finance", turns=6, good=6, bad=0)
    words = "A budget question about payroll costs"  # the finance rule; hr is mentioned too
    advisory = decide(policy("departments", Learning.ADVISORY), words, experts)
    assert advisory.intent == "finance" and advisory.target == "finance"

    learned = decide(policy("departments", Learning.ON), words, experts)
    assert learned.intent == "finance" and learned.target == "hr"
    assert "33 %" in learned.learning["changed"] and "12" in learned.learning["changed"]


def test_figures_count_only_from_the_minimum_of_turns(experts):
    figures("finance", "finance", turns=3, good=0, bad=3)
    words = "A budget question about payroll costs"
    decision = decide(policy("departments", Learning.ON, learning_min_turns=5), words, experts)
    assert decision.target == "finance" and not decision.learning["figures"][0]["counts"]


def test_without_an_alternative_the_expert_below_the_threshold_is_still_asked(experts):
    figures("finance", "finance", turns=12, good=2, bad=10)
    decision = decide(policy("departments", Learning.ON), "What is our budget?", experts)
    assert decision.target == "finance" and decision.learning["changed"] == ""


def test_figures_of_other_entry_agents_or_past_the_window_are_not_used(experts, settings):
    figures("finance", "none", turns=10, good=0, bad=10, entry="someone-else")
    old = timezone.now().date() - timezone.timedelta(days=settings.ROUTING_STATS_WINDOW_DAYS + 1)
    RoutingStat.objects.create(
        entry="assistant", expert="finance", intent="none", day=old, delegations=9
    )
    decision = decide(policy("site-assistant", Learning.ON), TIE, experts)
    assert decision.target == "finance" and decision.learning["figures"] == []


def test_the_router_model_reads_the_figures_as_priors_only_when_learning_is_on(
    experts, team, fake_openai
):
    figures("hr", "leave", turns=24, good=22, bad=2)
    figures("hr", "payroll", turns=10, good=4, bad=6)
    team.always["the router"] = lambda body: text('{"target": "hr", "reason": "people"}')
    entry = {**ENTRY, "provider": "openai", "model": "fake"}
    words = "Who can explain my contract renewal?"  # no rule, no tag
    for learning in (Learning.ADVISORY, Learning.ON):
        decide(policy("site-assistant", learning), words, experts, entry=entry)
    advisory, on = (r["messages"][0]["content"] for r in team.requests["the router"])
    assert "92 %" not in advisory
    assert "- hr (HR): 92 % good on leave (24 turns), 40 % on payroll (10 turns)" in on


@pytest.mark.django_db(transaction=True)
def test_a_turn_records_the_figures_it_used_on_its_root_and_span(user, settings, team):
    settings.TASKS_RUN_SYNC = True
    boss = make_agent("boss", is_entry=True, provider="offline")
    finance = make_agent("finance", display_name="Finance", tags=["finance"])
    boss.allowed_subagents.set([finance])
    policy("departments", Learning.ADVISORY).entry_agents.set([boss])
    figures("finance", "finance", turns=8, good=6, bad=2, entry="boss")
    sent = turn_start(
        user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="財務報告在哪裡？"
    )
    sent.run.refresh_from_db()
    assert sent.run.status == RunStatus.SUCCEEDED
    routing = sent.run.routing
    assert routing["intent"] == "finance" and routing["target"] == "finance"
    assert routing["learning"]["figures"][0]["rate"] == 75
    shown = _routing_attributes(routing)
    assert shown["agent_platform.routing.learning"] == "advisory"
    assert '"rate": 75' in shown["agent_platform.routing.figures"]
