"""Every model call writes one ledger row with its cost, through the real openai client: runs
and turns sum their rows, events carry the cost, history prices each call at its own time."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.db.models import Sum
from django.utils import timezone

from chat.models import ChatMessage
from chat.selectors import message_as_event_data
from delegation.models import Run
from delegation.usage.models import SpendCounter, UsageRecord
from tests.delegation.conftest import make_team
from tests.factories import make_agent
from tests.fake_openai import Reply, delegate, text
from tests.usage.conftest import make_price, of_type, turn

pytestmark = pytest.mark.django_db(transaction=True)


def _ledger() -> list[UsageRecord]:
    return list(UsageRecord.objects.order_by("created_at", "id"))


def _runs() -> dict[str, Run]:
    return {r.agent_config["name"]: r for r in Run.objects.all()}


async def test_each_call_is_a_ledger_row_and_runs_and_turns_are_their_sums(user, team):
    await database_sync_to_async(make_price)(input="0.15", cached="0.075", output="0.60")
    await database_sync_to_async(make_team)(boss=["finance"], finance=[])
    team.script("boss", delegate("finance", "Q3 budget?"), text("Finance says 60."))
    team.script(
        "finance",
        Reply(text_chunks=["60"], prompt_tokens=100, completion_tokens=20, cached_tokens=40),
    )
    events = await turn(user)

    rows = await database_sync_to_async(_ledger)()
    runs = await database_sync_to_async(_runs)()
    assert [(r.agent_name, r.depth, r.step) for r in rows] == [
        ("boss", 0, 0),
        ("finance", 1, 0),
        ("boss", 0, 1),
    ]
    # (11 x 0.15 + 7 x 0.60) / 1M for each boss call; (60 x 0.15 + 40 x 0.075 + 20 x 0.60) / 1M
    assert [r.cost for r in rows] == [
        Decimal("0.00000585"),
        Decimal("0.000024"),
        Decimal("0.00000585"),
    ]
    finance_row = rows[1]
    assert (finance_row.prompt_tokens, finance_row.cached_tokens) == (100, 40)
    assert finance_row.completion_tokens == 20 and finance_row.priced
    assert finance_row.user_id == user.id and finance_row.root_id == runs["boss"].id
    assert finance_row.session_id == runs["boss"].session_id

    for name, run in runs.items():
        own = sum((r.cost for r in rows if r.run_id == run.id), Decimal(0))
        assert Decimal(run.usage["cost"]) == own, name
        assert run.usage["prompt_tokens"] == sum(
            r.prompt_tokens for r in rows if r.run_id == run.id
        )
        assert run.usage["currency"] == "USD"
    turn_total = sum((r.cost for r in rows), Decimal(0))
    assert turn_total == Decimal("0.0000357")
    counter = await database_sync_to_async(SpendCounter.objects.get)(
        key=f"turn:{runs['boss'].id}:USD"
    )
    assert counter.spent == turn_total
    user_day = await database_sync_to_async(SpendCounter.objects.get)(
        key=f"user:{user.id}:day:{timezone.localdate()}:USD"
    )
    assert user_day.spent == turn_total

    finance_message = [
        e for e in of_type(events, "message.completed") if e["agent"]["name"] == "finance"
    ][0]
    assert finance_message["data"]["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cached_tokens": 40,
        "cost": "0.0000240000",
        "currency": "USD",
    }
    # Saved with the message: a reload (the snapshot) shows the same tokens and cost.
    stored = await database_sync_to_async(ChatMessage.objects.get)(pk=finance_message["message_id"])
    assert message_as_event_data(stored)["usage"] == finance_message["data"]["usage"]
    completed = {e["agent"]["name"]: e["data"]["usage"] for e in of_type(events, "run.completed")}
    assert completed["finance"]["cost"] == "0.0000240000"
    assert completed["boss"]["cost"] == "0.0000117000"  # its own two calls
    assert completed["boss"]["total_tokens"] == 36


async def test_a_run_is_priced_at_the_price_valid_when_it_ran(user, team):
    now = timezone.now()
    await database_sync_to_async(make_price)(
        input="1", output="2", valid_from=now - timedelta(days=30)
    )
    later = await database_sync_to_async(make_price)(
        input="10", output="20", valid_from=now + timedelta(hours=1)
    )
    await database_sync_to_async(make_team)(boss=[])
    await turn(user)  # 11 prompt, 7 completion at the old price
    first = (await database_sync_to_async(_ledger)())[0]
    assert first.cost == Decimal("0.000025")  # (11 x 1 + 7 x 2) / 1M

    later.valid_from = now - timedelta(minutes=1)  # the new price has started
    await database_sync_to_async(later.save)()
    await turn(user)
    rows = await database_sync_to_async(_ledger)()
    assert [r.cost for r in rows] == [Decimal("0.000025"), Decimal("0.00025")]
    assert rows[1].price_id == later.id and rows[0].price_id != later.id


async def test_an_unknown_model_costs_nothing_and_is_flagged(user, team):
    await database_sync_to_async(make_team)(boss=[])  # model "fake": no price
    events = await turn(user)
    row = (await database_sync_to_async(_ledger)())[0]
    assert row.priced is False and row.price_id is None and row.cost == 0
    assert (row.prompt_tokens, row.completion_tokens) == (11, 7)
    assert of_type(events, "run.completed")[0]["data"]["usage"]["cost"] == "0.0000000000"


async def test_a_server_that_reports_no_usage_is_charged_an_estimate(user, team):
    await database_sync_to_async(make_price)(input="1", output="1")
    await database_sync_to_async(make_team)(boss=[])
    team.script("boss", Reply(text_chunks=["abcdefgh", "ijkl"], usage=False))
    await turn(user)
    row = (await database_sync_to_async(_ledger)())[0]
    assert row.usage_reported is False
    assert row.completion_tokens == 3  # 12 ASCII characters, 4 a token
    assert row.prompt_tokens > 0 and row.cost == Decimal(row.prompt_tokens + 3) / 1_000_000


async def test_offline_calls_are_recorded_free(user, entry_agent):
    await turn(user, "what is 6*7?")
    rows = await database_sync_to_async(_ledger)()
    assert rows and all(r.model == "offline" and r.priced and r.cost == 0 for r in rows)
    assert all(r.provider == "offline" and r.prompt_tokens > 0 for r in rows)


async def test_deleting_a_chat_keeps_what_it_cost(user, team):
    await database_sync_to_async(make_price)(input="1", output="1")
    await database_sync_to_async(make_agent)(
        "boss", provider="openai", model="fake", is_entry=True, system_prompt="You are boss."
    )
    await turn(user)
    await database_sync_to_async(lambda: Run.objects.get().session.delete())()
    assert not await database_sync_to_async(Run.objects.exists)()
    total = await database_sync_to_async(
        lambda: UsageRecord.objects.aggregate(c=Sum("cost"))["c"]
    )()
    assert total == Decimal("0.000018")
