"""Prices with history, the append-only usage ledger, money budgets and their spend counters."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from delegation.usage.money import COST_DIGITS, COST_PLACES, PRICE_DIGITS, PRICE_PLACES, ZERO

CURRENCY = RegexValidator(r"^[A-Z]{3}$", _("A three-letter ISO 4217 code, e.g. USD."))


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
        verbose_name=_("provider"),
        max_length=32,
        default="openai",
        help_text=_(
            "The provider the agent resolves to: openai, or a2a for a remote agent (priced "
            "under its model, else its name, as it reports usage)."
        ),
    )
    model = models.CharField(
        verbose_name=_("model"),
        max_length=200,
        help_text=_("Exactly as agents name it: gpt-4o-mini."),
    )
    currency = models.CharField(
        verbose_name=_("currency"),
        max_length=3,
        default=default_currency,
        validators=[CURRENCY],
        help_text=_("Only prices in USAGE_CURRENCY are used (one currency per platform)."),
    )
    input_per_million = _price_field(verbose_name=_("input / 1M tokens"))
    cached_input_per_million = _price_field(
        null=True,
        blank=True,
        verbose_name=_("cached input / 1M tokens"),
        help_text=_("Blank: cached prompt tokens cost the input price."),
    )
    output_per_million = _price_field(verbose_name=_("output / 1M tokens"))
    valid_from = models.DateTimeField(
        verbose_name=_("valid from"), default=timezone.now, help_text=_("Calls from then on.")
    )
    source = models.CharField(
        verbose_name=_("source"),
        max_length=300,
        blank=True,
        help_text=_("Where the figures come from."),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("model price")
        verbose_name_plural = _("model prices")
        ordering = ["provider", "model", "-valid_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model", "currency", "valid_from"], name="one_price_per_start"
            )
        ]

    def __str__(self) -> str:
        return gettext("%(model)s from %(day)s") % {
            "model": f"{self.provider}/{self.model}",
            "day": f"{self.valid_from:%Y-%m-%d}",
        }


class UsageRecord(models.Model):
    """One model call (append-only: rows are written once and never changed): who, which
    agent, which model, the tokens the server reported, the price used and the cost.

    Links to runs, sessions, users and agents keep their ids without database constraints, so
    deleting a chat (which deletes its runs) never deletes what was spent."""

    created_at = models.DateTimeField(
        verbose_name=_("created at"), default=timezone.now, db_index=True
    )  # the call's start
    day = models.DateField(
        verbose_name=_("day"), db_index=True
    )  # created_at's date in TIME_ZONE, as budgets count it
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    session = models.ForeignKey(
        "chat.ChatSession",
        verbose_name=_("session"),
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    run = models.ForeignKey(
        "delegation.Run",
        verbose_name=_("run"),
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    root = models.ForeignKey(
        "delegation.Run",
        verbose_name=_("root"),
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text=_("The turn (its root run)."),
    )
    agent = models.ForeignKey(
        "agents.Agent",
        verbose_name=_("agent"),
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    agent_name = models.CharField(verbose_name=_("agent name"), max_length=64, db_index=True)
    depth = models.PositiveSmallIntegerField(verbose_name=_("depth"), default=0)
    step = models.PositiveSmallIntegerField(verbose_name=_("step"), default=0)
    provider = models.CharField(verbose_name=_("provider"), max_length=32)
    model = models.CharField(verbose_name=_("model"), max_length=200)
    prompt_tokens = models.PositiveIntegerField(
        verbose_name=_("prompt tokens"), default=0
    )  # cached ones included
    cached_tokens = models.PositiveIntegerField(verbose_name=_("cached tokens"), default=0)
    completion_tokens = models.PositiveIntegerField(verbose_name=_("completion tokens"), default=0)
    usage_reported = models.BooleanField(
        verbose_name=_("usage reported"),
        default=True,
        help_text=_("False: the server sent no usage; tokens estimated from text."),
    )
    priced = models.BooleanField(
        verbose_name=_("priced"),
        default=True,
        help_text=_("False: no price for this model when called; cost 0."),
    )
    price = models.ForeignKey(
        ModelPrice, verbose_name=_("price"), null=True, on_delete=models.PROTECT, related_name="+"
    )
    estimate = _cost_field(
        verbose_name=_("estimate"), help_text=_("What the budget check held before the call.")
    )
    cost = _cost_field(verbose_name=_("cost"))
    currency = models.CharField(verbose_name=_("currency"), max_length=3)

    class Meta:
        verbose_name = _("usage record")
        verbose_name_plural = _("usage records")
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

    USER = "user", _("one user")
    AGENT = "agent", _("one agent")


class BudgetPeriod(models.TextChoices):
    """The calendar period a budget counts (in TIME_ZONE)."""

    DAY = "day", _("Day")
    MONTH = "month", _("Month")


class Budget(models.Model):
    """A money cap for one user or one agent per day or month, overriding the environment's
    default (USER_DAILY_MAX_COST, USER_MONTHLY_MAX_COST, AGENT_DAILY_MAX_COST, …)."""

    scope = models.CharField(verbose_name=_("scope"), max_length=8, choices=BudgetScope.choices)
    period = models.CharField(verbose_name=_("period"), max_length=8, choices=BudgetPeriod.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
    )
    agent = models.ForeignKey(
        "agents.Agent", verbose_name=_("agent"), null=True, blank=True, on_delete=models.CASCADE
    )
    max_cost = models.DecimalField(
        verbose_name=_("max cost"),
        max_digits=COST_DIGITS,
        decimal_places=4,
        validators=[MinValueValidator(ZERO)],
        help_text=_("In USAGE_CURRENCY. 0 stops every priced call."),
    )
    note = models.CharField(verbose_name=_("note"), max_length=200, blank=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("budget")
        verbose_name_plural = _("budgets")
        ordering = ["scope", "period"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(scope="user", user__isnull=False, agent__isnull=True)
                    | Q(scope="agent", agent__isnull=False, user__isnull=True)
                ),
                name="budget_names_its_owner",
                violation_error_message=_(
                    "A user budget names a user (and no agent); an agent "
                    "budget names an agent (and no user)."
                ),
            ),
            models.UniqueConstraint(
                fields=["scope", "period", "user"],
                condition=Q(scope="user"),
                name="one_budget_per_user_period",
                violation_error_message=_("This user already has a budget for this period."),
            ),
            models.UniqueConstraint(
                fields=["scope", "period", "agent"],
                condition=Q(scope="agent"),
                name="one_budget_per_agent_period",
                violation_error_message=_("This agent already has a budget for this period."),
            ),
        ]

    def __str__(self) -> str:
        owner = self.user if self.scope == BudgetScope.USER else self.agent
        return gettext("%(owner)s per %(period)s: %(max_cost)s") % {
            "owner": owner,
            "period": self.get_period_display(),
            "max_cost": self.max_cost,
        }


class SpendCounter(models.Model):
    """What was spent in one budget's scope (a turn, a user's day or month, an agent's day or
    month): the ledger's sum kept as one row, so a budget check locks one row, not a sum."""

    key = models.CharField(
        verbose_name=_("key"), max_length=120, unique=True
    )  # e.g. user:5:day:2026-01-31:USD
    scope = models.CharField(
        verbose_name=_("scope"), max_length=16, db_index=True
    )  # turn, user_day, user_month, …
    spent = _cost_field(verbose_name=_("spent"))
    currency = models.CharField(verbose_name=_("currency"), max_length=3)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("spend counter")
        verbose_name_plural = _("spend counters")
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.key


class SpendHold(models.Model):
    """Money set aside on a counter for one model call in flight: its estimate. The call's
    ledger row replaces it; a hold whose call never reported (a crash) lapses at expires_at."""

    hold_id = models.UUIDField(
        verbose_name=_("hold ID"), db_index=True
    )  # one per model call, across its counters
    counter = models.ForeignKey(
        SpendCounter, verbose_name=_("counter"), on_delete=models.CASCADE, related_name="holds"
    )
    amount = _cost_field(verbose_name=_("amount"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"), db_index=True)

    class Meta:
        verbose_name = _("spend hold")
        verbose_name_plural = _("spend holds")

    def __str__(self) -> str:
        return f"{self.amount} on {self.counter_id} until {self.expires_at:%H:%M:%S}"
