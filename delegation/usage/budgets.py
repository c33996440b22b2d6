"""Money budgets: which caps apply to a call, holding its estimate on them atomically, and
settling the hold with the call's cost.

Every cap has a counter row (what its scope spent). A call's estimate is checked and held
inside one transaction that locks the call's counters in key order: two calls racing for the
same money queue on the lock, and the second sees the first one's hold. See docs/usage.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from agents.providers.base import ProviderError
from delegation.models import Run
from delegation.usage.models import Budget, BudgetPeriod, BudgetScope, SpendCounter, SpendHold
from delegation.usage.money import ZERO, money, money_short


class BudgetExceeded(ProviderError):
    """The call would pass a money budget: it is not made and the run ends failed."""

    def __init__(self, detail: str) -> None:
        super().__init__("budget_exceeded", detail)


@dataclass(frozen=True)
class Cap:
    """One budget a call counts against: its counter key and its limit (None: no limit)."""

    scope: str  # turn, user_day, user_month, agent_day, agent_month
    key: str
    max_cost: Decimal | None
    source: str  # where the limit comes from, for admins
    label: str  # whose budget, for admins: "user alice's daily"


@dataclass(frozen=True)
class Hold:
    """Money held for one call on its capped counters; `keys` are every counter it adds to."""

    hold_id: uuid.UUID
    caps: tuple[Cap, ...]
    held: bool  # whether SpendHold rows were written


def _setting_cap(name: str) -> tuple[Decimal | None, str]:
    value = getattr(settings, name)
    return (None if value is None else Decimal(value)), name


def run_caps(*, run: Run, day: date, currency: str) -> list[Cap]:
    """The five budgets a call of `run` counts against, on `day`, with their limits: the turn
    (the entry agent's override, else TURN_MAX_COST), the user's day and month, the agent's
    day and month (a Budget row, else the environment's default)."""
    rows = {
        (b.scope, b.period): b
        for b in Budget.objects.filter(
            Q(scope=BudgetScope.USER, user_id=run.user_id)
            | Q(scope=BudgetScope.AGENT, agent_id=run.agent_id)
        )
    }

    def limit(scope: str, period: str, setting: str) -> tuple[Decimal | None, str]:
        row = rows.get((scope, period))
        return (row.max_cost, f"budget #{row.pk}") if row else _setting_cap(setting)

    month = day.strftime("%Y-%m")
    user, agent = run.user_id, run.agent_id
    username, agent_name = run.user.get_username(), run.agent_config.get("name", "?")
    return [
        Cap("turn", f"turn:{run.root_id_or_self}:{currency}", *_turn_limit(run), "the turn's"),
        Cap(
            "user_day",
            f"user:{user}:day:{day}:{currency}",
            *limit(BudgetScope.USER, BudgetPeriod.DAY, "USER_DAILY_MAX_COST"),
            f"user {username}'s daily",
        ),
        Cap(
            "user_month",
            f"user:{user}:month:{month}:{currency}",
            *limit(BudgetScope.USER, BudgetPeriod.MONTH, "USER_MONTHLY_MAX_COST"),
            f"user {username}'s monthly",
        ),
        Cap(
            "agent_day",
            f"agent:{agent}:day:{day}:{currency}",
            *limit(BudgetScope.AGENT, BudgetPeriod.DAY, "AGENT_DAILY_MAX_COST"),
            f"agent {agent_name}'s daily",
        ),
        Cap(
            "agent_month",
            f"agent:{agent}:month:{month}:{currency}",
            *limit(BudgetScope.AGENT, BudgetPeriod.MONTH, "AGENT_MONTHLY_MAX_COST"),
            f"agent {agent_name}'s monthly",
        ),
    ]


def _turn_limit(run: Run) -> tuple[Decimal | None, str]:
    """The entry agent's turn cost as pinned when the turn began, else TURN_MAX_COST."""
    root = run.root if run.root_id and run.root is not None else run
    config = root.agent_config
    override = config.get("turn_max_cost")
    if override not in (None, ""):
        return Decimal(str(override)), f"agent {config.get('name', '?')}'s turn max cost"
    return _setting_cap("TURN_MAX_COST")


def _locked_counters(caps: list[Cap], currency: str) -> dict[str, SpendCounter]:
    """The caps' counters, created if missing, locked in key order (so never a deadlock)."""
    keys = sorted(c.key for c in caps)

    def locked() -> dict[str, SpendCounter]:
        rows = SpendCounter.objects.select_for_update(no_key=True).filter(key__in=keys)
        return {c.key: c for c in rows.order_by("key")}

    counters = locked()
    if len(counters) < len(keys):
        scopes = {c.key: c.scope for c in caps}
        missing = [k for k in keys if k not in counters]
        SpendCounter.objects.bulk_create(
            [SpendCounter(key=k, scope=scopes[k], currency=currency) for k in missing],
            ignore_conflicts=True,
        )
        counters = locked()
    return counters


def _in_flight(counter_ids: list[int], now: datetime) -> dict[int, Decimal]:
    """Money held on each counter by calls still in flight; lapsed holds are removed."""
    rows = (
        SpendHold.objects.filter(counter_id__in=counter_ids)
        .values("counter_id")
        .annotate(
            live=Sum("amount", filter=Q(expires_at__gt=now)),
            lapsed=Count("id", filter=Q(expires_at__lte=now)),
        )
    )
    held, lapsed = {}, False
    for row in rows:
        held[row["counter_id"]] = money(row["live"])
        lapsed = lapsed or row["lapsed"] > 0
    if lapsed:
        SpendHold.objects.filter(counter_id__in=counter_ids, expires_at__lte=now).delete()
    return held


def spend_hold(*, caps: list[Cap], estimate: Decimal, currency: str) -> Hold:
    """Hold `estimate` on every capped counter, or raise BudgetExceeded naming the first cap
    it would pass (spent + held + estimate > limit). A free call is never refused."""
    now = timezone.now()
    hold_id = uuid.uuid4()
    capped = [c for c in caps if c.max_cost is not None] if estimate > 0 else []
    if not capped:
        return Hold(hold_id, tuple(caps), held=False)
    with transaction.atomic():
        counters = _locked_counters(caps, currency)
        held = _in_flight([counters[c.key].pk for c in capped], now)
        for cap in capped:
            counter = counters[cap.key]
            in_flight = held.get(counter.pk, ZERO)
            if counter.spent + in_flight + estimate > cap.max_cost:  # type: ignore[operator]
                raise BudgetExceeded(
                    f"Stopped by {cap.label} budget of {money_short(cap.max_cost)} {currency} "
                    f"({cap.source}): spent {money_short(counter.spent)}, held for calls in "
                    f"flight {money_short(in_flight)}, this call estimated at "
                    f"{money_short(estimate)}."
                )
        expires = now + timedelta(seconds=settings.MODEL_CALL_WORST_SECONDS + 60)
        SpendHold.objects.bulk_create(
            [
                SpendHold(
                    hold_id=hold_id, counter=counters[c.key], amount=estimate, expires_at=expires
                )
                for c in capped
            ]
        )
    return Hold(hold_id, tuple(caps), held=True)


def spend_settle(*, hold: Hold, cost: Decimal, currency: str) -> None:
    """Add the call's cost to its counters and release its hold (inside the caller's
    transaction, with the ledger row)."""
    if cost > 0:
        counters = _locked_counters(list(hold.caps), currency)
        SpendCounter.objects.filter(pk__in=[c.pk for c in counters.values()]).update(
            spent=F("spent") + cost, updated_at=timezone.now()
        )
    if hold.held:
        SpendHold.objects.filter(hold_id=hold.hold_id).delete()
