"""Prices with history, the append-only usage ledger, money budgets and their spend counters."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from delegation.usage.money import COST_DIGITS, COST_PLACES, PRICE_DIGITS, PRICE_PLACES, ZERO

CURRENCY = RegexValidator(r"^[A-Z]{3}$", "A three-letter ISO 4217 code, e.g. USD.")


def default_currency() -> str:
    """The platform's currency (USAGE_CURRENCY)."""
    return settings.USAGE_CURRENCY


def _price_field(**kwargs: Any) -> models.DecimalField:
    return models.DecimalField(
        max_digits=PRICE_DIGITS,
        decimal_places=PRICE_PLACES,
        validators=[MinValueValidator(ZERO)],
        **kwargs,
    )


def _cost_field(**kwargs: Any) -> models.DecimalField:
    return models.DecimalField(
        max_digits=COST_DIGITS, decimal_places=COST_PLACES, default=ZERO, **kwargs
    )


class ModelPrice(models.Model):
    """What one model costs per million tokens from `valid_from` on. A price change is a new
    row, so every past call keeps the price it was made at."""

    provider = models.CharField(
        max_length=32, default="openai", help_text="The provider the agent resolves to: openai."
    )
    model = models.CharField(max_length=200, help_text="Exactly as agents name it: gpt-4o-mini.")
    currency = models.CharField(
        max_length=3,
        default=default_currency,
        validators=[CURRENCY],
        help_text="Only prices in USAGE_CURRENCY are used (one currency per platform).",
    )
    input_per_million = _price_field(verbose_name="input / 1M tokens")
    cached_input_per_million = _price_field(
        null=True,
        blank=True,
        verbose_name="cached input / 1M tokens",
        help_text="Blank: cached prompt tokens cost the input price.",
    )
    output_per_million = _price_field(verbose_name="output / 1M tokens")
    valid_from = models.DateTimeField(default=timezone.now, help_text="Calls from then on.")
    source = models.CharField(max_length=300, blank=True, help_text="Where the figures come from.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["provider", "model", "-valid_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model", "currency", "valid_from"], name="one_price_per_start"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} from {self.valid_from:%Y-%m-%d}"


class UsageRecord(models.Model):
    """One model call (append-only: rows are written once and never changed): who, which
    agent, which model, the tokens the server reported, the price used and the cost.

    Links to runs, sessions, users and agents keep their ids without database constraints, so
    deleting a chat (which deletes its runs) never deletes what was spent."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)  # the call's start
    day = models.DateField(db_index=True)  # created_at's date in TIME_ZONE, as budgets count it
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    session = models.ForeignKey(
        "chat.ChatSession",
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    run = models.ForeignKey(
        "delegation.Run",
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    root = models.ForeignKey(
        "delegation.Run",
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="The turn (its root run).",
    )
    agent = models.ForeignKey(
        "agents.Agent",
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    agent_name = models.CharField(max_length=64, db_index=True)
    depth = models.PositiveSmallIntegerField(default=0)
    step = models.PositiveSmallIntegerField(default=0)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    prompt_tokens = models.PositiveIntegerField(default=0)  # cached ones included
    cached_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    usage_reported = models.BooleanField(
        default=True, help_text="False: the server sent no usage; tokens estimated from text."
    )
    priced = models.BooleanField(
        default=True, help_text="False: no price for this model when called; cost 0."
    )
    price = models.ForeignKey(ModelPrice, null=True, on_delete=models.PROTECT, related_name="+")
    estimate = _cost_field(help_text="What the budget check held before the call.")
    cost = _cost_field()
    currency = models.CharField(max_length=3)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "day"], name="usage_user_day"),
            models.Index(fields=["agent_name", "day"], name="usage_agent_day"),
            models.Index(fields=["root"], name="usage_root"),
            models.Index(fields=["run"], name="usage_run"),
            models.Index(fields=["session"], name="usage_session"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_name} {self.model} {self.cost} {self.currency}"


class BudgetScope(models.TextChoices):
    """Whose spending a budget caps."""

    USER = "user", "one user"
    AGENT = "agent", "one agent"


class BudgetPeriod(models.TextChoices):
    """The calendar period a budget counts (in TIME_ZONE)."""

    DAY = "day"
    MONTH = "month"


class Budget(models.Model):
    """A money cap for one user or one agent per day or month, overriding the environment's
    default (USER_DAILY_MAX_COST, USER_MONTHLY_MAX_COST, AGENT_DAILY_MAX_COST, …)."""

    scope = models.CharField(max_length=8, choices=BudgetScope.choices)
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    agent = models.ForeignKey("agents.Agent", null=True, blank=True, on_delete=models.CASCADE)
    max_cost = models.DecimalField(
        max_digits=COST_DIGITS,
        decimal_places=4,
        validators=[MinValueValidator(ZERO)],
        help_text="In USAGE_CURRENCY. 0 stops every priced call.",
    )
    note = models.CharField(max_length=200, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["scope", "period"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(scope="user", user__isnull=False, agent__isnull=True)
                    | Q(scope="agent", agent__isnull=False, user__isnull=True)
                ),
                name="budget_names_its_owner",
                violation_error_message="A user budget names a user (and no agent); an agent "
                "budget names an agent (and no user).",
            ),
            models.UniqueConstraint(
                fields=["scope", "period", "user"],
                condition=Q(scope="user"),
                name="one_budget_per_user_period",
                violation_error_message="This user already has a budget for this period.",
            ),
            models.UniqueConstraint(
                fields=["scope", "period", "agent"],
                condition=Q(scope="agent"),
                name="one_budget_per_agent_period",
                violation_error_message="This agent already has a budget for this period.",
            ),
        ]

    def __str__(self) -> str:
        owner = self.user if self.scope == BudgetScope.USER else self.agent
        return f"{owner} per {self.period}: {self.max_cost}"


class SpendCounter(models.Model):
    """What was spent in one budget's scope (a turn, a user's day or month, an agent's day or
    month): the ledger's sum kept as one row, so a budget check locks one row, not a sum."""

    key = models.CharField(max_length=120, unique=True)  # e.g. user:5:day:2026-01-31:USD
    scope = models.CharField(max_length=16, db_index=True)  # turn, user_day, user_month, …
    spent = _cost_field()
    currency = models.CharField(max_length=3)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.key


class SpendHold(models.Model):
    """Money set aside on a counter for one model call in flight: its estimate. The call's
    ledger row replaces it; a hold whose call never reported (a crash) lapses at expires_at."""

    hold_id = models.UUIDField(db_index=True)  # one per model call, across its counters
    counter = models.ForeignKey(SpendCounter, on_delete=models.CASCADE, related_name="holds")
    amount = _cost_field()
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.amount} on {self.counter_id} until {self.expires_at:%H:%M:%S}"
