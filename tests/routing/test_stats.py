"""Routing statistics counted where things happen, once: delegations and their ends, verdicts,
ratings (a changed rating moves), refusals; a duplicated delivery or end counts nothing more."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Agent
from chat.feedback import feedback_clear, feedback_set
from chat.models import ChatMessage, MessageRole
from delegation.models import Run, RunStatus
from delegation.routing.models import RoutingStat
from delegation.routing.seeds import routing_seed
from delegation.routing.stats import stat_bump
from delegation.routing.tasks import prune_stats
from delegation.runs.ending import run_end_elsewhere
from delegation.tasks import advance_run
from delegation.turns import turn_start
from tests.delegation.conftest import make_team
from tests.fake_openai import delegate, text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def departments(settings, team):
    """boss → finance, hr under the shipped department rules; tasks run inline."""
    settings.TASKS_RUN_SYNC = True
    make_team(boss=["finance", "hr"], finance=[], hr=[], legal=[])
    routing_seed(name="departments", entry_agents=[Agent.objects.get(name="boss")])
    return team


def turn(user, words: str) -> Run:
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=words)
    sent.run.refresh_from_db()
    assert sent.run.status == RunStatus.SUCCEEDED, sent.run.error
    return sent.run


def counts(**key) -> dict[str, int]:
    row = RoutingStat.objects.filter(**key).values().first() or {}
    return {k: v for k, v in row.items() if k not in ("id", "entry", "expert", "intent", "day")}


def test_a_routed_delegation_is_counted_for_its_entry_agent_expert_and_intent(user, departments):
    departments.script("finance", text("Revenue is up 4 %."))
    turn(user, "What does finance say about revenue?")
    turn(user, "And the 預算 for next year?")  # the same intent, in Chinese

    figures = counts(entry="boss", expert="finance", intent="finance")
    assert figures["delegations"] == 2 and figures["succeeded"] == 2
    assert figures["refused"] == figures["fell_back"] == figures["validation_failed"] == 0
    assert RoutingStat.objects.count() == 1  # one row per (entry, expert, intent, day)


def test_a_delegation_the_entry_agent_chose_itself_counts_under_no_intent(user, departments):
    departments.script("boss", delegate("hr", "check the rota"), text("HR checked."))
    turn(user, "Could someone check the rota?")  # no rule matches; the router says self
    assert counts(entry="boss", expert="hr", intent="none")["delegations"] == 1


def test_a_duplicated_delivery_or_end_counts_nothing_more(user, departments):
    turn(user, "What does finance say about revenue?")
    child = Run.objects.get(depth=1)
    advance_run(str(child.id))  # the same task delivered again: the run has ended
    assert not run_end_elsewhere(run=child, status=RunStatus.CANCELLED)  # ended already
    assert counts(entry="boss", expert="finance", intent="finance")["delegations"] == 1


def test_verdicts_and_the_failover_they_cause_are_counted(user, departments):
    Agent.objects.filter(name="finance").update(validate_answers="rules", answer_min_chars=20)
    departments.script("finance", text("Up."), text("Revenue is up 4 % on last year."))
    turn(user, "What does finance say about revenue?")

    figures = counts(entry="boss", expert="finance", intent="finance")
    assert figures["validation_failed"] == 1 and figures["validation_passed"] == 1
    assert figures["delegations"] == 2 and figures["fell_back"] == 1


def test_a_rating_moves_between_up_and_down_and_is_counted_once(user, departments):
    root = turn(user, "What does finance say about revenue?")
    answer = ChatMessage.objects.filter(run=root, role=MessageRole.AGENT).last()
    key = {"entry": "boss", "expert": "finance", "intent": "finance"}

    feedback_set(user=user, message=answer, rating=1)
    feedback_set(user=user, message=answer, rating=1, note="again")  # no change of rating
    assert (counts(**key)["rated_up"], counts(**key)["rated_down"]) == (1, 0)
    feedback_set(user=user, message=answer, rating=-1)
    assert (counts(**key)["rated_up"], counts(**key)["rated_down"]) == (0, 1)
    feedback_clear(user=user, message=answer)
    feedback_clear(user=user, message=answer)  # nothing left to take back
    assert (counts(**key)["rated_up"], counts(**key)["rated_down"]) == (0, 0)


def test_an_experts_own_message_rated_counts_for_that_expert(user, departments):
    departments.script("boss", delegate("hr", "check the rota"), text("HR checked."))
    turn(user, "Could someone check the rota?")
    said = ChatMessage.objects.filter(run__depth=1, role=MessageRole.AGENT).first()
    feedback_set(user=user, message=said, rating=-1)
    assert counts(entry="boss", expert="hr", intent="none")["rated_down"] == 1


def test_a_refused_delegation_is_counted_against_the_expert_asked(user, departments):
    departments.script("boss", delegate("legal", "read the NDA"), text("I could not ask."))
    turn(user, "Could someone read this agreement?")  # legal is not among boss's experts
    assert counts(entry="boss", expert="legal", intent="none")["refused"] == 1


def test_counting_can_be_switched_off(user, departments, settings):
    settings.ROUTING_STATS_ENABLED = False
    turn(user, "What does finance say about revenue?")
    assert not RoutingStat.objects.exists()


def test_an_unknown_counter_is_refused():
    with pytest.raises(ValueError, match="unknown routing counters"):
        stat_bump(entry="a", expert="b", intent="none", day=None, typo=1)  # type: ignore[arg-type]


def test_an_expert_asked_by_an_expert_counts_for_the_turns_entry_agent_and_intent(
    user, team, settings
):
    settings.TASKS_RUN_SYNC = True
    make_team(boss=["finance"], finance=["hr"], hr=[])
    routing_seed(name="departments", entry_agents=[Agent.objects.get(name="boss")])
    team.script("finance", delegate("hr", "payroll costs?"), text("Finance and HR agree."))
    turn(user, "What does finance say about the budget?")
    assert counts(entry="boss", expert="hr", intent="finance")["delegations"] == 1
    assert counts(entry="boss", expert="finance", intent="finance")["delegations"] == 1


def test_the_daily_prune_forgets_rows_past_every_period_that_reads_them(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["prune-routing-stats"]
    assert entry["task"] == prune_stats.name == "routing.prune_stats"
    today = timezone.now().date()
    for back in (0, 366, 367, 400):
        day = today - timedelta(days=back)
        RoutingStat.objects.create(entry="a", expert="b", intent="none", day=day, delegations=1)
    assert prune_stats() == 2
    kept = sorted((today - d).days for d in RoutingStat.objects.values_list("day", flat=True))
    assert kept == [0, 366]
