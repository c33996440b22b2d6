"""Money budgets at their edges, through the real openai client: the call that would pass a
budget is not made, and the run ends failed with budget_exceeded, plainly.

Prices here make the arithmetic exact: input is free and output costs $1 a token, agents
allow 10 output tokens, so every call is estimated at $10 and (7 completion tokens) costs $7.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents.models import Agent
from delegation.models import Run, RunStatus
from delegation.usage.budgets import BudgetExceeded, Cap, spend_hold
from delegation.usage.models import Budget, SpendCounter, SpendHold, UsageRecord
from tests.delegation.conftest import make_team
from tests.fake_openai import delegate, text
from tests.usage.conftest import make_price, of_type, turn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_default_limits(settings):
    """Only the budget a test sets applies."""
    settings.TURN_MAX_COST = None
    settings.USER_DAILY_MAX_COST = None
    settings.USER_MONTHLY_MAX_COST = None
    settings.AGENT_DAILY_MAX_COST = None
    settings.AGENT_MONTHLY_MAX_COST = None


def _setup_team(**subagents: list[str]) -> dict[str, Agent]:
    make_price()
    agents = make_team(**subagents)
    Agent.objects.update(max_tokens=10)
    return agents


def _runs() -> list[Run]:
    return list(Run.objects.order_by("created_at"))


def _calls() -> list[str]:
    return list(
        UsageRecord.objects.order_by("created_at", "id").values_list("agent_name", flat=True)
    )


def _assert_refused(events: list[dict], run: Run, label: str) -> None:
    """The run failed with budget_exceeded: in its error (admins see which budget), in the
    `error` event and in `run.completed`, with a plain sentence for the user."""
    assert run.status == RunStatus.FAILED
    assert run.error["code"] == "budget_exceeded"
    assert label in run.error["detail"]
    plain = run.error["message"]
    assert plain.startswith("It would cost more than the spending limit allows.")
    error = [e for e in of_type(events, "error") if e["run_id"] == str(run.id)]
    assert error and error[0]["data"]["code"] == "budget_exceeded"
    assert error[0]["data"]["message"] == plain
    completed = [e for e in of_type(events, "run.completed") if e["run_id"] == str(run.id)][0]
    assert completed["data"]["status"] == "failed"
    assert completed["data"]["error"] == {"code": "budget_exceeded", "message": plain}
    notes = [e for e in of_type(events, "message.completed") if e["run_id"] == str(run.id)]
    assert notes[-1]["data"]["text"].startswith("Sorry, I could not finish this: it would cost")


@pytest.mark.parametrize(
    ("limit", "calls_made"),
    [("17", ["boss", "finance"]), ("16.9999", ["boss"])],
    ids=["exactly-at-the-limit-is-allowed", "a-hair-below-refuses"],
)
async def test_the_turn_budget_covers_the_whole_tree(user, team, settings, limit, calls_made):
    settings.TURN_MAX_COST = Decimal(limit)
    await database_sync_to_async(_setup_team)(boss=["finance"], finance=[])
    team.script("boss", delegate("finance"), text("boss done"))
    events = await turn(user)
    # boss: 0 + 10 <= limit, costs 7; finance: 7 + 10 = 17; boss again: 14 + 10 = 24.
    assert await database_sync_to_async(_calls)() == calls_made
    boss, finance = await database_sync_to_async(_runs)()
    _assert_refused(events, boss, "the turn's budget of")
    if limit == "17":
        assert finance.status == RunStatus.SUCCEEDED
    else:
        _assert_refused(events, finance, "the turn's budget of 16.9999 USD (TURN_MAX_COST)")
        done = of_type(events, "delegation.completed")[0]["data"]
        assert done["status"] == "failed"


async def test_the_entry_agents_turn_max_cost_overrides_the_environment(user, team, settings):
    settings.TURN_MAX_COST = Decimal("1000")
    await database_sync_to_async(_setup_team)(boss=["finance"], finance=[])
    await database_sync_to_async(Agent.objects.filter(name="boss").update)(
        turn_max_cost=Decimal("16.9999")
    )
    # The finance expert's own override does not apply: the turn is the entry agent's.
    await database_sync_to_async(Agent.objects.filter(name="finance").update)(
        turn_max_cost=Decimal("1000")
    )
    team.script("boss", delegate("finance"), text("boss done"))
    events = await turn(user)
    assert await database_sync_to_async(_calls)() == ["boss"]
    boss, finance = await database_sync_to_async(_runs)()
    _assert_refused(events, finance, "(agent boss's turn max cost)")


def _limit(scope: str, via: str, limit: str, settings, user, agent: Agent) -> str:
    """Set one budget; the words its refusal names it with."""
    owner, period = scope.split("_")
    setting = f"{owner.upper()}_{'DAILY' if period == 'day' else 'MONTHLY'}_MAX_COST"
    if via == "setting":
        setattr(settings, setting, Decimal(limit))
        source = setting
    else:
        budget = Budget.objects.create(
            scope=owner,
            period=period,
            user=user if owner == "user" else None,
            agent=agent if owner == "agent" else None,
            max_cost=Decimal(limit),
        )
        source = f"budget #{budget.pk}"
        setattr(settings, setting, Decimal("1000"))  # the row wins over the environment
    who = f"user {user.username}" if owner == "user" else f"agent {agent.name}"
    return f"{who}'s {'daily' if period == 'day' else 'monthly'} budget of {limit} USD ({source})"


@pytest.mark.parametrize("scope", ["user_day", "user_month", "agent_day", "agent_month"])
@pytest.mark.parametrize("via", ["setting", "budget row"])
@pytest.mark.parametrize(
    ("limit", "answered"), [("17", 2), ("16.9999", 1)], ids=["at-the-limit", "a-hair-below"]
)
async def test_user_and_agent_budgets_refuse_the_call_that_would_pass_them(
    user, team, settings, scope, via, limit, answered
):
    agents = await database_sync_to_async(_setup_team)(solo=[])
    label = await database_sync_to_async(_limit)(scope, via, limit, settings, user, agents["solo"])
    # One call a turn: 0 + 10, then 7 + 10 = 17, then 14 + 10 = 24.
    for _ in range(answered):
        events = await turn(user)
        assert of_type(events, "run.completed")[-1]["data"]["status"] == "succeeded"
    events = await turn(user)
    runs = await database_sync_to_async(_runs)()
    _assert_refused(events, runs[-1], label)
    assert len(await database_sync_to_async(_calls)()) == answered


async def test_another_users_spending_does_not_count_against_mine(user, other_user, team, settings):
    settings.USER_DAILY_MAX_COST = Decimal("10")
    await database_sync_to_async(_setup_team)(solo=[])
    events = await turn(other_user)
    assert of_type(events, "run.completed")[-1]["data"]["status"] == "succeeded"
    events = await turn(user)
    assert of_type(events, "run.completed")[-1]["data"]["status"] == "succeeded"


async def test_an_expert_over_its_agent_budget_fails_and_its_caller_goes_on(user, team, settings):
    agents = await database_sync_to_async(_setup_team)(boss=["finance"], finance=[])
    await database_sync_to_async(Budget.objects.create)(
        scope="agent", period="day", agent=agents["finance"], max_cost=Decimal("10")
    )
    team.script("boss", delegate("finance"), delegate("finance"), text("boss done"))
    events = await turn(user)
    assert await database_sync_to_async(_calls)() == ["boss", "finance", "boss", "boss"]
    runs = await database_sync_to_async(_runs)()
    boss, first, second = runs
    assert boss.status == RunStatus.SUCCEEDED and first.status == RunStatus.SUCCEEDED
    _assert_refused(events, second, "agent finance's daily budget of 10")


async def test_free_and_unknown_models_are_never_refused(user, team, settings):
    settings.USER_DAILY_MAX_COST = Decimal("0")
    settings.TURN_MAX_COST = Decimal("0")
    await database_sync_to_async(make_team)(solo=[])  # model "fake" has no price here
    events = await turn(user)
    assert of_type(events, "run.completed")[-1]["data"]["status"] == "succeeded"


def _caps(limit: str) -> list[Cap]:
    return [Cap("user_day", "user:1:day:2026-01-01:USD", Decimal(limit), "test", "test")]


def test_money_held_for_a_call_in_flight_counts_until_it_lapses(db):
    first = spend_hold(caps=_caps("15"), estimate=Decimal("10"), currency="USD")
    assert first.held
    with pytest.raises(BudgetExceeded) as refused:  # 0 spent + 10 held + 10 > 15
        spend_hold(caps=_caps("15"), estimate=Decimal("10"), currency="USD")
    assert "held for calls in flight 10," in refused.value.message
    # The first call's worker died: its hold lapses and stops counting.
    SpendHold.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    spend_hold(caps=_caps("15"), estimate=Decimal("10"), currency="USD")
    assert SpendHold.objects.count() == 1  # the lapsed hold was removed
    assert SpendCounter.objects.get().spent == 0
