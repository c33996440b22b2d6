"""Writes of usage: hold a model call's estimate against the money budgets before it is made,
then write its ledger row and cost; seed the price table."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from agents.providers.base import ModelRequest, ToolCallRequest, Usage
from config.db.prepared import PreparedInsert
from delegation.metrics import COST, TOKENS
from delegation.models import Run
from delegation.usage.budgets import Hold, run_caps, spend_hold, spend_settle
from delegation.usage.models import ModelPrice, UsageRecord
from delegation.usage.money import money, money_text
from delegation.usage.pricing import (
    Quote,
    estimate_prompt_tokens,
    estimate_tokens,
    model_name,
    output_cap,
    price_at,
)
from delegation.usage.seed import SEED_PRICES


@dataclass(frozen=True)
class CallHold:
    """A model call cleared to go: its price, estimate and the money held for it."""

    provider: str
    model: str
    quote: Quote
    prompt_estimate: int
    estimate: Decimal
    started_at: datetime
    day: date
    currency: str
    hold: Hold


@dataclass(frozen=True)
class Charge:
    """What one model call used and cost, as its ledger row says."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cost: Decimal
    currency: str

    @property
    def tokens(self) -> int:
        """Its tokens as the turn's budget counts them (delegation.tree.budget.turn_tokens)."""
        return self.prompt_tokens + self.completion_tokens

    def message_usage(self) -> dict[str, Any]:
        """The `usage` of the call's `message.completed` event (cost as a decimal string)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "cost": money_text(self.cost),
            "currency": self.currency,
        }


def usage_hold(*, run: Run, provider: str, request: ModelRequest) -> CallHold:
    """Price the call about to be made, estimate it (prompt tokens + max output tokens at the
    current price) and hold that on every money budget it counts against; BudgetExceeded
    (code budget_exceeded) when it would pass one, and then the call is not made."""
    started_at = timezone.now()
    day = timezone.localdate(started_at)
    currency = settings.USAGE_CURRENCY
    model = model_name(provider=provider, request=request)
    quote = price_at(provider=provider, model=model, at=started_at)
    prompt_estimate = estimate_prompt_tokens(request)
    estimate = quote.cost(
        prompt_tokens=prompt_estimate, cached_tokens=0, completion_tokens=output_cap(request)
    )
    # Free and unknown models cost nothing: no budget to check, no counter to move.
    caps = run_caps(run=run, day=day, currency=currency) if quote.price is not None else []
    hold = spend_hold(caps=caps, estimate=estimate, currency=currency)
    return CallHold(
        provider, model, quote, prompt_estimate, estimate, started_at, day, currency, hold
    )


# One ledger row per model call: compiled once per connection.
_RECORD = PreparedInsert(UsageRecord)


def usage_charge(
    *,
    run: Run,
    hold: CallHold,
    usage: Usage,
    text: str = "",
    calls: Sequence[ToolCallRequest] = (),
) -> Charge:
    """Record a finished model call: one ledger row with its tokens and cost (at the price
    held before the call), added to its budgets' counters; the run's usage becomes the sum of
    its ledger rows. A server that reported no usage is charged tokens estimated from text."""
    reported = usage.prompt_tokens > 0 or usage.completion_tokens > 0
    prompt = usage.prompt_tokens if reported else hold.prompt_estimate
    completion = (
        usage.completion_tokens
        if reported
        else estimate_tokens(text + "".join(c.name + c.arguments for c in calls))
    )
    cached = min(usage.cached_tokens, prompt)
    cost = hold.quote.cost(prompt_tokens=prompt, cached_tokens=cached, completion_tokens=completion)
    # The row and the settled spend commit together; inside a caller's transaction they are part
    # of it (no savepoint: a failure here fails that transaction too).
    with transaction.atomic(savepoint=False):
        _RECORD.insert(
            UsageRecord(
                created_at=hold.started_at,
                day=hold.day,
                user_id=run.user_id,
                session_id=run.session_id,
                run_id=run.id,
                root_id=run.root_id_or_self,
                agent_id=run.agent_id,
                agent_name=run.agent_config.get("name", ""),
                depth=run.depth,
                step=run.steps,
                provider=hold.provider,
                model=hold.model,
                prompt_tokens=prompt,
                cached_tokens=cached,
                completion_tokens=completion,
                usage_reported=reported,
                priced=hold.quote.priced,
                price=hold.quote.price,
                estimate=hold.estimate,
                cost=cost,
                currency=hold.currency,
            )
        )
        spend_settle(hold=hold.hold, cost=cost, currency=hold.currency)
        agent = run.agent_config.get("name", "")
        transaction.on_commit(
            partial(_metered, agent, hold.model, prompt, completion, cost, hold.currency),
            robust=True,
        )
    # The run's usage is its ledger's sum so far (one worker at a time; one that takes a run
    # over sums the ledger first, delegation.steps.runner): add this row.
    run.usage = _usage_plus(run.usage, prompt, cached, completion, cost)
    return Charge(prompt, cached, completion, cost, hold.currency)


def _metered(
    agent: str, model: str, prompt: int, completion: int, cost: Decimal, currency: str
) -> None:
    """A charged call's tokens and cost in the metrics, once its ledger row committed."""
    TOKENS.labels(agent=agent, model=model, direction="input").inc(prompt)
    TOKENS.labels(agent=agent, model=model, direction="output").inc(completion)
    COST.labels(agent=agent, model=model, currency=currency).inc(float(cost))


def _usage_plus(
    usage: dict[str, Any], prompt: int, cached: int, completion: int, cost: Decimal
) -> dict[str, Any]:
    """A run's usage with one more ledger row added (the shape of run_usage_from_ledger)."""
    prompt += usage.get("prompt_tokens", 0)
    completion += usage.get("completion_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cached_tokens": usage.get("cached_tokens", 0) + cached,
        "cost": money_text(money(usage.get("cost")) + cost),
        "currency": settings.USAGE_CURRENCY,
    }


def run_usage_from_ledger(*, run_id: uuid.UUID) -> dict[str, Any]:
    """A run's usage as the sum of its ledger rows (what `run.completed` carries)."""
    totals = UsageRecord.objects.filter(run_id=run_id).aggregate(
        prompt=Sum("prompt_tokens"),
        cached=Sum("cached_tokens"),
        completion=Sum("completion_tokens"),
        cost=Sum("cost"),
    )
    prompt, completion = totals["prompt"] or 0, totals["completion"] or 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cached_tokens": totals["cached"] or 0,
        "cost": money_text(totals["cost"]),
        "currency": settings.USAGE_CURRENCY,
    }


def usage_seed_prices() -> list[str]:
    """Add the seed prices (docs/usage.md) that are missing; the models added."""
    added = []
    for row in SEED_PRICES:
        _, created = ModelPrice.objects.get_or_create(
            provider=row["provider"],
            model=row["model"],
            currency=row["currency"],
            valid_from=row["valid_from"],
            defaults={
                "input_per_million": row["input"],
                "cached_input_per_million": row["cached_input"],
                "output_per_million": row["output"],
                "source": row["source"],
            },
        )
        if created:
            added.append(row["model"])
    return added
