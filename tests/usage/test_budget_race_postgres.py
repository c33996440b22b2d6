"""On Postgres, parallel model calls racing for a budget's last cents never overspend it:
parallel holds on one counter, and parallel experts of one turn on real Celery workers."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.db import connection

from agents.models import Agent
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from delegation.usage.budgets import BudgetExceeded, Cap, spend_hold
from delegation.usage.models import SpendCounter, SpendHold, UsageRecord
from tests.delegation.conftest import make_team
from tests.e2e.conftest import flush_redis, require_distributed, workers  # noqa: F401  (fixtures)
from tests.e2e.test_distributed_delegation import wait_for, worker_env
from tests.fake_openai import Reply, Team, text, tool_calls
from tests.usage.conftest import make_price

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

EXPERTS = ["ana", "ben", "cai", "dee"]


@pytest.fixture(autouse=True)
def _postgres() -> None:
    require_distributed()


def test_parallel_holds_on_one_budget_never_pass_it():
    """24 calls of $1 race for $5.50 at once, each on its own connection: exactly 5 are held."""
    caps = [Cap("user_day", f"user:race:day:{uuid.uuid4()}:USD", Decimal("5.50"), "test", "x")]
    start = threading.Barrier(24)
    outcomes: list[str] = []

    def call() -> None:
        try:
            start.wait(timeout=30)
            spend_hold(caps=caps, estimate=Decimal("1"), currency="USD")
            outcomes.append("held")
        except BudgetExceeded:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes.count("held") == 5 and outcomes.count("refused") == 19
    assert SpendHold.objects.count() == 5


def _pair_barrier() -> Callable[[dict[str, Any]], Reply]:
    """A reply that waits until two experts' calls are in flight together, then answers."""
    barrier = threading.Barrier(2)

    def reply(body: dict[str, Any]) -> Reply:
        barrier.wait(timeout=30)
        return text("expert answer")

    return reply


def _setup() -> None:
    make_price()  # $1 an output token: each call is estimated at $10 and costs $7
    make_team(boss=EXPERTS, **{name: [] for name in EXPERTS})
    Agent.objects.update(max_tokens=10)


async def test_parallel_experts_racing_for_the_last_cents_of_a_turn(
    workers,  # noqa: F811
    user,
    fake_openai,
):
    """The boss ($7 spent) fans out to four experts at once under a $27 turn budget: $20 is
    left, so exactly two experts get a call ($10 estimate each), both in flight together; the
    other two are refused, and so is the boss's answer ($21 spent + $10 > $27)."""
    await database_sync_to_async(_setup)()
    team = Team(fake_openai)
    delegations = [("delegate", {"target": name, "task": "count"}) for name in EXPERTS]
    team.script("boss", tool_calls(*delegations), text("boss done"))
    pair = _pair_barrier()
    for name in EXPERTS:
        team.script(name, pair)
    env = {**worker_env(fake_openai), "TURN_MAX_COST": "27"}
    await sync_to_async(workers.start)("w1", **env)
    await sync_to_async(workers.start)("w2", **env)
    sent = await database_sync_to_async(turn_start)(
        user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="go"
    )
    await wait_for(lambda: Run.objects.get(pk=sent.run.id).is_final, timeout=90)

    def outcome() -> tuple[dict[str, Run], list[UsageRecord], SpendCounter]:
        runs = {r.agent_config["name"]: r for r in Run.objects.all()}
        counter = SpendCounter.objects.get(key=f"turn:{sent.run.id}:USD")
        return runs, list(UsageRecord.objects.all()), counter

    runs, ledger, counter = await database_sync_to_async(outcome)()
    experts = [runs[name] for name in EXPERTS]
    answered = [r for r in experts if r.status == RunStatus.SUCCEEDED]
    refused = [r for r in experts if r.status == RunStatus.FAILED]
    assert len(answered) == 2 and len(refused) == 2
    assert all(r.error["code"] == "budget_exceeded" for r in refused)
    assert runs["boss"].status == RunStatus.FAILED
    assert runs["boss"].error["code"] == "budget_exceeded"
    assert sorted(r.agent_name for r in ledger) == sorted(
        ["boss", *(r.agent_config["name"] for r in answered)]
    )
    spent = sum((r.cost for r in ledger), Decimal(0))
    assert spent == Decimal(21) and counter.spent == spent <= Decimal(27)
    assert not await database_sync_to_async(SpendHold.objects.exists)()
