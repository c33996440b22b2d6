"""Reads of usage, every figure summed from the ledger: grouped reports, costly turns with
their trees, cost per run, models used without a price, budget refusals."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet, Subquery, Sum
from django.utils.translation import gettext as _

from delegation.models import Run
from delegation.usage.models import UsageRecord
from delegation.usage.money import money

# What a report may group by, and the ledger columns each groups on.
GROUPS: dict[str, tuple[str, ...]] = {
    "day": ("day",),
    "agent": ("agent_name",),
    "user": ("user_id", "user__username"),
    "session": ("session_id", "session__title"),
    "model": ("provider", "model"),
}


@dataclass(frozen=True)
class UsageRow:
    """One group's totals."""

    key: str
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    model_calls: int
    cost: Decimal
    currency: str
    label: str = ""  # what people read for the key: a session's title (the key is its id)


_TOTALS = {
    "prompt_tokens": Sum("prompt_tokens"),
    "cached_tokens": Sum("cached_tokens"),
    "completion_tokens": Sum("completion_tokens"),
    "model_calls": Count("id"),
    "cost_sum": Sum("cost"),
}


def ledger(*, start: date, end: date, user: Any = None) -> QuerySet[UsageRecord]:
    """Ledger rows of the days from `start` to `end` (both included), one user's if given.
    Eval turns (their sandbox users) are not usage anyone incurred: reports leave them out."""
    rows = UsageRecord.objects.filter(day__gte=start, day__lte=end).exclude(
        user__username__startswith=settings.EVALS_SANDBOX_PREFIX
    )
    return rows if user is None else rows.filter(user=user)


def _key(group_by: str, row: dict[str, Any]) -> str:
    if group_by == "user":
        return row["user__username"] or f"user #{row['user_id']}"
    if group_by == "model":
        return f"{row['provider']}/{row['model']}"
    value = row[GROUPS[group_by][0]]
    return value.isoformat() if isinstance(value, date) else str(value or "")


def _label(group_by: str, key: str, row: dict[str, Any]) -> str:
    if group_by != "session":
        return key
    if row.get("session__title"):
        return str(row["session__title"])
    if not key:
        return _("(no chat)")
    return _("Untitled chat %(id)s") % {"id": key[:8]}


def _row(key: str, row: dict[str, Any], label: str = "") -> UsageRow:
    return UsageRow(
        key=key,
        prompt_tokens=row["prompt_tokens"] or 0,
        cached_tokens=row["cached_tokens"] or 0,
        completion_tokens=row["completion_tokens"] or 0,
        model_calls=row["model_calls"],
        cost=money(row["cost_sum"]),
        currency=row["currency"],
        label=label or key,
    )


def usage_report(*, group_by: str, start: date, end: date, user: Any = None) -> list[UsageRow]:
    """Totals per group (per currency, should prices have changed currency): days in order,
    other groups costliest first."""
    columns = GROUPS[group_by]
    grouped = (
        ledger(start=start, end=end, user=user)
        .values(*columns, "currency")
        .annotate(**_TOTALS)
        .order_by()
    )
    rows = []
    for grouped_row in grouped:
        key = _key(group_by, grouped_row)
        rows.append(_row(key, grouped_row, _label(group_by, key, grouped_row)))
    if group_by == "day":
        return sorted(rows, key=lambda r: (r.key, r.currency))
    return sorted(rows, key=lambda r: (-r.cost, r.key, r.currency))


def usage_total(*, start: date, end: date, user: Any = None) -> list[UsageRow]:
    """The period's totals, one row per currency (key "total")."""
    grouped = ledger(start=start, end=end, user=user).values("currency").annotate(**_TOTALS)
    return [_row("total", r) for r in grouped.order_by("currency")]


def usage_by_day_and_agent(*, start: date, end: date) -> dict[tuple[date, str], Decimal]:
    """Cost per (day, agent) in the period, for the stacked chart."""
    grouped = (
        ledger(start=start, end=end)
        .values("day", "agent_name")
        .annotate(cost_sum=Sum("cost"))
        .order_by()
    )
    return {(r["day"], r["agent_name"]): money(r["cost_sum"]) for r in grouped}


def run_costs(*, run_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Decimal]:
    """Each run's own cost (its ledger rows)."""
    grouped = (
        UsageRecord.objects.filter(run_id__in=list(run_ids))
        .values("run_id")
        .annotate(cost_sum=Sum("cost"))
        .order_by()
    )
    return {r["run_id"]: money(r["cost_sum"]) for r in grouped}


def ledger_cost(**match: Any) -> Subquery:
    """A subquery summing the cost of the ledger rows matching `match` (e.g. run_id=OuterRef)."""
    rows = UsageRecord.objects.filter(**match).order_by().values(*match)
    return Subquery(rows.annotate(total=Sum("cost")).values("total")[:1])


def turn_cost(*, root_id: uuid.UUID) -> Decimal:
    """A turn's cost: every ledger row of its tree."""
    return money(UsageRecord.objects.filter(root_id=root_id).aggregate(c=Sum("cost"))["c"])


@dataclass(frozen=True)
class TurnNode:
    """One run of a costly turn's tree: who, its own cost, its place in the tree."""

    run_id: uuid.UUID
    agent: str
    depth: int
    status: str
    model_calls: int
    cost: Decimal


@dataclass(frozen=True)
class CostlyTurn:
    """A turn with its total and its tree (nodes depth first; runs deleted since are absent)."""

    root_id: uuid.UUID
    user: str
    agent: str
    started_at: Any
    model_calls: int
    cost: Decimal
    currency: str
    tree: list[TurnNode]


def usage_top_turns(*, start: date, end: date, limit: int = 10) -> list[CostlyTurn]:
    """The costliest turns of the period, each with the cost of every run of its tree."""
    top = list(
        ledger(start=start, end=end)
        .exclude(root_id=None)
        .values("root_id", "currency")
        .annotate(cost_sum=Sum("cost"), calls=Count("id"))
        .order_by("-cost_sum", "root_id")[:limit]
    )
    root_ids = [t["root_id"] for t in top]
    runs = list(
        Run.objects.filter(Q(pk__in=root_ids) | Q(root_id__in=root_ids))
        .select_related("user")
        .order_by("created_at")
    )
    per_run = (
        UsageRecord.objects.filter(root_id__in=root_ids)
        .values("run_id")
        .annotate(cost_sum=Sum("cost"), calls=Count("id"))
        .order_by()
    )
    own = {r["run_id"]: (money(r["cost_sum"]), r["calls"]) for r in per_run}
    return [_costly_turn(t, runs, own) for t in top]


def _costly_turn(
    top: dict[str, Any], runs: list[Run], own: dict[Any, tuple[Decimal, int]]
) -> CostlyTurn:
    root_id = top["root_id"]
    tree = _depth_first([r for r in runs if root_id in (r.pk, r.root_id)])
    root = next((r for r in tree if r.pk == root_id), None)
    return CostlyTurn(
        root_id=root_id,
        user=root.user.get_username() if root else "",
        agent=root.agent_shown if root else "(deleted)",
        started_at=root.created_at if root else None,
        model_calls=top["calls"],
        cost=money(top["cost_sum"]),
        currency=top["currency"],
        tree=[
            TurnNode(
                run_id=r.pk,
                agent=r.agent_shown or r.agent_config.get("name", ""),
                depth=r.depth,
                status=r.status,
                model_calls=own.get(r.pk, (money(0), 0))[1],
                cost=own.get(r.pk, (money(0), 0))[0],
            )
            for r in tree
        ],
    )


def _depth_first(runs: list[Run]) -> list[Run]:
    """Runs of one tree, each caller before its experts."""
    children: dict[Any, list[Run]] = {}
    for run in runs:
        children.setdefault(run.parent_id, []).append(run)
    ordered: list[Run] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        current = stack.pop()
        ordered.append(current)
        stack.extend(reversed(children.get(current.pk, [])))
    return ordered


def usage_unpriced_models(*, start: date, end: date) -> list[dict[str, Any]]:
    """Models called without a price in the period (their calls were counted at 0)."""
    return list(
        ledger(start=start, end=end)
        .filter(priced=False)
        .values("provider", "model")
        .annotate(calls=Count("id"), tokens=Sum("prompt_tokens") + Sum("completion_tokens"))
        .order_by("-calls", "model")
    )


def budget_refusals(*, start: date, end: date, limit: int = 20) -> QuerySet[Run]:
    """Runs a money budget stopped in the period, newest first (their error says which)."""
    return (
        Run.objects.filter(
            error__code="budget_exceeded",
            created_at__date__gte=start,
            created_at__date__lte=end,
        )
        .select_related("user")
        .order_by("-created_at")[:limit]
    )


DEFAULT_DAYS = 30  # a report without dates covers the last 30 days, today included
MAX_DAYS = 366  # the longest period one report may cover


def report_period(start: date | None, end: date | None, today: date) -> tuple[date, date]:
    """The period a report covers: the given dates, or the last DEFAULT_DAYS days up to `end`
    (or today); ValueError when `start` is after `end` or the span is over MAX_DAYS."""
    end = end or (max(today, start) if start else today)
    start = start or end - timedelta(days=DEFAULT_DAYS - 1)
    if start > end:
        raise ValueError("`from` must be on or before `to`.")
    if (end - start).days + 1 > MAX_DAYS:
        raise ValueError(f"A report covers at most {MAX_DAYS} days.")
    return start, end
