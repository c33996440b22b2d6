"""Fixtures for usage tests: priced models, a turn driven over the websocket, ledger reads."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from delegation.usage.models import ModelPrice, UsageRecord
from tests.chat.helpers import connect, send_frame
from tests.fake_openai import Team


@pytest.fixture
def team(fake_openai) -> Team:
    """Per-agent scripted replies (agents from make_team say "You are NAME.")."""
    return Team(fake_openai)


def make_price(
    model: str = "fake",
    *,
    input: str = "0",
    cached: str | None = None,
    output: str = "1000000",
    valid_from: Any = None,
    currency: str = "USD",
) -> ModelPrice:
    """A price for `model` (default: $1 per output token, input free, so a call's estimate is
    its max tokens in dollars and its cost its completion tokens)."""
    return ModelPrice.objects.create(
        provider="openai",
        model=model,
        input_per_million=Decimal(input),
        cached_input_per_million=None if cached is None else Decimal(cached),
        output_per_million=Decimal(output),
        currency=currency,
        valid_from=valid_from or timezone.now() - timedelta(days=1),
    )


def record(user: Any, agent: str, day: date, cost: str, session: Any, **extra: Any) -> UsageRecord:
    """A ledger row as a model call writes it (openai/gpt-4o-mini, 100 + 10 tokens)."""
    return UsageRecord.objects.create(
        day=day,
        user=user,
        session_id=session,
        agent_name=agent,
        provider="openai",
        model=extra.pop("model", "gpt-4o-mini"),
        prompt_tokens=extra.pop("prompt", 100),
        cached_tokens=extra.pop("cached", 0),
        completion_tokens=extra.pop("completion", 10),
        cost=Decimal(cost),
        currency="USD",
        **extra,
    )


async def turn(user: Any, text: str = "help me", timeout: float = 15) -> list[dict[str, Any]]:
    """Send one message over the websocket; every event until the root's run.completed."""
    ws = await connect(user)
    await ws.send_json_to(send_frame(text))
    events = []
    while True:
        event = await ws.receive_json_from(timeout=timeout)
        events.append(event)
        if event["type"] == "run.completed" and event["agent"]["depth"] == 0:
            break
    await ws.disconnect()
    return events


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events of one type, in order."""
    return [e for e in events if e["type"] == kind]
