"""Prices and money: the price valid at a moment, cached tokens, the token estimate, exact
decimals, the seeded table, and money settings refused when malformed."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from agents.providers.base import ModelRequest
from delegation.usage.chart import nice_ceiling, stacked_cost_chart
from delegation.usage.models import ModelPrice
from delegation.usage.money import money, money_short, money_text
from delegation.usage.pricing import (
    estimate_prompt_tokens,
    estimate_tokens,
    model_name,
    output_cap,
    price_at,
)
from delegation.usage.seed import SEED_PRICES
from delegation.usage.services import usage_seed_prices
from tests.usage.conftest import make_price

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_prices_are_read_once_per_model_and_a_saved_price_applies_at_once(
    settings, django_assert_num_queries
):
    settings.PRICE_CACHE_SECONDS = 3600
    now = timezone.now()
    first = make_price("m", input="1", valid_from=now - timedelta(days=1))
    with django_assert_num_queries(1):
        assert price_at(provider="openai", model="m", at=now).price == first
        assert price_at(provider="openai", model="m", at=now).price == first
    # A change no signal reports (another process's) is seen once the kept rows expire...
    ModelPrice.objects.filter(pk=first.pk).update(input_per_million=Decimal("9"))
    kept = price_at(provider="openai", model="m", at=now).price
    assert kept.input_per_million == Decimal("1")
    settings.PRICE_CACHE_SECONDS = 0
    assert price_at(provider="openai", model="m", at=now).price.input_per_million == Decimal("9")
    # ...and one saved or deleted in this process (the admin's) from the next call on.
    settings.PRICE_CACHE_SECONDS = 3600
    later = make_price("m", input="2", valid_from=now - timedelta(hours=1))
    assert price_at(provider="openai", model="m", at=now).price == later
    later.delete()
    assert price_at(provider="openai", model="m", at=now).price == first


@pytest.mark.django_db
def test_the_price_valid_at_a_moment_is_the_latest_that_started_by_then():
    now = timezone.now()
    old = make_price("m", input="1", valid_from=now - timedelta(days=10))
    new = make_price("m", input="2", valid_from=now)
    make_price("m", input="3", valid_from=now + timedelta(seconds=1))
    make_price("m", input="9", valid_from=now - timedelta(days=1), currency="EUR")
    assert price_at(provider="openai", model="m", at=now - timedelta(seconds=1)).price == old
    assert price_at(provider="openai", model="m", at=now).price == new
    unknown = price_at(provider="openai", model="m", at=now - timedelta(days=11))
    assert unknown.price is None and not unknown.priced
    assert price_at(provider="openai", model="M", at=now).price is None  # names match exactly
    offline = price_at(provider="offline", model="offline", at=now)
    assert (
        offline.priced
        and offline.cost(prompt_tokens=10**6, cached_tokens=0, completion_tokens=1) == 0
    )


@pytest.mark.django_db
def test_cached_prompt_tokens_cost_the_cached_price_or_the_input_price():
    with_cached = price_at(provider="openai", model="gpt-4o-mini", at=timezone.now())
    # seeded: 0.15 input, 0.075 cached, 0.60 output per million
    cost = with_cached.cost(prompt_tokens=1000, cached_tokens=400, completion_tokens=100)
    assert cost == Decimal("0.00018")  # (600 x 0.15 + 400 x 0.075 + 100 x 0.60) / 1M
    make_price("plain", input="1", output="0")
    plain = price_at(provider="openai", model="plain", at=timezone.now())
    assert plain.cost(prompt_tokens=10, cached_tokens=4, completion_tokens=0) == Decimal("0.00001")
    # a server claiming more cached tokens than prompt tokens is not believed past the prompt
    assert with_cached.cost(prompt_tokens=10, cached_tokens=99, completion_tokens=0) == money(
        Decimal("0.00000075")
    )


def test_the_token_estimate_counts_ascii_by_four_and_everything_else_by_one():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("预算是多少") == 5
    assert estimate_tokens("Q3 预算") == 1 + 2  # "Q3 " is 3 ASCII characters
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "x" * 400}])
    assert 100 < estimate_prompt_tokens(request) < 120  # the text plus the JSON around it
    assert output_cap(request) == 4096  # USAGE_ESTIMATE_OUTPUT_TOKENS
    assert output_cap(ModelRequest(model="m", messages=[], max_tokens=10)) == 10
    assert model_name(provider="offline", request=request) == "offline"
    assert model_name(provider="openai", request=request) == "m"


def test_money_is_decimal_rounded_half_up_to_ten_places():
    assert money("0.00000000005") == Decimal("0.0000000001")
    assert money("0.00000000004") == Decimal("0")
    assert money_text(Decimal("1.5")) == "1.5000000000"
    assert money_text(None) == "0.0000000000"
    assert money_short(Decimal("17.0000")) == "17" and money_short("0.00340") == "0.0034"


def test_the_chart_scale_is_a_round_number_and_other_agents_share_grey():
    assert nice_ceiling(Decimal("0.0034")) == Decimal("0.005")
    assert nice_ceiling(Decimal("7")) == Decimal("10") and nice_ceiling(Decimal("2")) == 2
    assert nice_ceiling(Decimal(0)) == 1
    day = timezone.localdate()
    costs = {(day, f"agent{i}"): Decimal(10 - i) for i in range(9)}
    chart = stacked_cost_chart(costs, day, day, "USD")
    assert [name for _, name in chart.legend][-1] == "other agents"
    assert len(chart.legend) == 7 and len(chart.bars) == 7
    # 54 in all: steps of 20 (54 / 4 rounded up to 1, 2, 2.5 or 5 x 10^n), up to 60
    assert [t.label for t in chart.y_ticks] == ["0", "US$20.00", "US$40.00", "US$60.00"]
    assert stacked_cost_chart({}, day, day, "USD").empty


@pytest.mark.django_db
def test_the_seeded_prices_match_the_seed_module_and_seeding_is_idempotent():
    migration = importlib.import_module("delegation.usage.migrations.0002_seed_prices")
    seeded = {
        (
            p.model,
            p.valid_from.date().isoformat(),
            p.input_per_million,
            p.cached_input_per_million,
            p.output_per_million,
        )
        for p in ModelPrice.objects.all()
    }
    assert seeded == {
        (
            row["model"],
            row["valid_from"].date().isoformat(),
            row["input"],
            row["cached_input"],
            row["output"],
        )
        for row in SEED_PRICES
    }
    assert {m for m, *_ in migration.PRICES} == {"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1"}
    assert usage_seed_prices() == []
    ModelPrice.objects.filter(model="gpt-4.1").delete()
    assert usage_seed_prices() == ["gpt-4.1"]


@pytest.mark.parametrize("value", ["abc", "-1", "NaN"])
def test_a_malformed_money_limit_stops_the_server_from_starting(value):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TURN_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**clean, "DJANGO_DEBUG": "true", "TURN_MAX_COST": value},
    )
    assert result.returncode != 0 and "TURN_MAX_COST must be a decimal amount" in result.stderr
