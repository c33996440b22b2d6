"""Agent states (idle, working, waiting for experts, waiting for a human, with the oldest
wait) from the runs in flight, and per-agent quality counts from verdicts and reviews."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from config.text import joined
from delegation.humans.models import Review, ReviewStatus, Verdict
from delegation.models import FINAL_STATUSES, Run, RunStatus

IDLE, WORKING = "idle", "working"
BLOCKED_INTERNAL, BLOCKED_USER = "blocked_internal", "blocked_user"  # experts / a person
STATE_WORDS = {  # what the admin shows (in the admin's language)
    IDLE: _("idle"),
    WORKING: _("working"),
    BLOCKED_INTERNAL: _("waiting for experts"),
    BLOCKED_USER: _("waiting for a human"),
}
# Review statuses as counted words ("1 wrong, 1 pending"), lower case in English.
REVIEW_WORDS = {
    "pending": pgettext_lazy("review count", "pending"),
    "correct": pgettext_lazy("review count", "correct"),
    "wrong": pgettext_lazy("review count", "wrong"),
    "fixed": pgettext_lazy("review count", "fixed"),
}


def agent_states() -> dict[int, dict[str, Any]]:
    """{agent id: {state, working, blocked_internal, blocked_user, oldest_wait}} of every agent
    with a run in flight; an agent missing from it is idle."""
    rows = (
        Run.objects.exclude(status__in=FINAL_STATUSES)
        .values("agent_id")
        .annotate(
            working=Count("id", filter=Q(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])),
            blocked_internal=Count("id", filter=Q(status=RunStatus.WAITING)),
            blocked_user=Count("id", filter=Q(status=RunStatus.WAITING_HUMAN)),
            oldest_wait=Min(
                "waiting_since", filter=Q(status__in=[RunStatus.WAITING, RunStatus.WAITING_HUMAN])
            ),
        )
    )
    return {row["agent_id"]: {**row, "state": _state(row)} for row in rows}


def idle_state() -> dict[str, Any]:
    """The state of an agent with nothing in flight."""
    return {
        "state": IDLE,
        "working": 0,
        "blocked_internal": 0,
        "blocked_user": 0,
        "oldest_wait": None,
    }


def _state(row: dict[str, Any]) -> str:
    if row["blocked_user"]:
        return BLOCKED_USER
    if row["blocked_internal"]:
        return BLOCKED_INTERNAL
    return WORKING if row["working"] else IDLE


def state_text(state: dict[str, Any], now: datetime | None = None) -> str:
    """ "working 2 · waiting for a human 1 (oldest 3 min)", or "idle"."""
    parts = [
        f"{STATE_WORDS[key]} {state[key]}"
        for key in (WORKING, BLOCKED_INTERNAL, BLOCKED_USER)
        if state.get(key)
    ]
    if not parts:
        return str(STATE_WORDS[IDLE])
    if state.get("oldest_wait"):
        parts[-1] += gettext(" (oldest %(age)s)") % {"age": age(state["oldest_wait"], now)}
    return " · ".join(parts)


def age(since: datetime, now: datetime | None = None) -> str:
    """How long ago, in the largest unit: "45 s", "3 min", "2 h", "4 d"."""
    seconds = max(0, int(((now or timezone.now()) - since).total_seconds()))
    units = (
        (_("%(n)d d"), 86400),
        (_("%(n)d h"), 3600),
        (_("%(n)d min"), 60),
    )
    for unit, size in units:
        if seconds >= size:
            return str(unit) % {"n": seconds // size}
    return gettext("%(n)d s") % {"n": seconds}


def agent_quality() -> dict[str, dict[str, int]]:
    """{agent name: counts of verdicts (valid, invalid, trusted: validator failed) and reviews
    (pending, correct, wrong, fixed)}."""
    quality: dict[str, dict[str, int]] = {}
    verdicts = Verdict.objects.values("agent_name").annotate(
        n_valid=Count("id", filter=Q(valid=True, validator_failed=False)),
        n_invalid=Count("id", filter=Q(valid=False)),
        n_trusted=Count("id", filter=Q(validator_failed=True)),
    )
    reviews = Review.objects.values("agent_name").annotate(
        **{f"n_{s}": Count("id", filter=Q(status=s)) for s in ReviewStatus.values}
    )
    for row in [*verdicts, *reviews]:
        counts = quality.setdefault(row.pop("agent_name"), {})
        counts.update({key.removeprefix("n_"): value for key, value in row.items()})
    return quality


def quality_text(counts: dict[str, int] | None) -> str:
    """ "9/10 valid · reviews: 1 wrong, 1 pending", or "—" when nothing was checked."""
    if not counts:
        return "—"
    checked = counts.get("valid", 0) + counts.get("invalid", 0) + counts.get("trusted", 0)
    parts = (
        [
            gettext("%(valid)d/%(checked)d valid")
            % {"valid": counts.get("valid", 0) + counts.get("trusted", 0), "checked": checked}
        ]
        if checked
        else []
    )
    reviewed = [
        f"{counts[s]} {REVIEW_WORDS.get(s, s)}" for s in ReviewStatus.values if counts.get(s)
    ]
    if reviewed:
        parts.append(gettext("reviews: %(counts)s") % {"counts": joined(reviewed)})
    return " · ".join(parts) or "—"


def _count(rows: QuerySet, key: str) -> Coalesce:
    """A correlated COUNT of `rows` per outer agent (matched on `key`)."""
    counted = rows.order_by().values(key).annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted[:1]), 0)


def agent_annotations() -> dict[str, Any]:
    """Per-agent state and quality as queryset annotations (one query for an admin list):
    `hl_working`, `hl_experts`, `hl_human`, `hl_oldest_wait`, `hl_valid`, `hl_invalid`,
    `hl_trusted`, and `hl_<review status>` counts."""
    runs = Run.objects.filter(agent=OuterRef("pk"))
    waits = runs.filter(status__in=[RunStatus.WAITING, RunStatus.WAITING_HUMAN])
    verdicts = Verdict.objects.filter(agent_name=OuterRef("name"))
    reviews = Review.objects.filter(agent_name=OuterRef("name"))
    annotations: dict[str, Any] = {
        "hl_working": _count(
            runs.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]), "agent"
        ),
        "hl_experts": _count(runs.filter(status=RunStatus.WAITING), "agent"),
        "hl_human": _count(runs.filter(status=RunStatus.WAITING_HUMAN), "agent"),
        "hl_oldest_wait": Subquery(waits.order_by("waiting_since").values("waiting_since")[:1]),
        "hl_valid": _count(verdicts.filter(valid=True, validator_failed=False), "agent_name"),
        "hl_invalid": _count(verdicts.filter(valid=False), "agent_name"),
        "hl_trusted": _count(verdicts.filter(validator_failed=True), "agent_name"),
    }
    for status in ReviewStatus.values:
        annotations[f"hl_{status}"] = _count(reviews.filter(status=status), "agent_name")
    return annotations


def annotated_state(agent: Any) -> dict[str, Any]:
    """The state of an agent read from `agent_annotations`."""
    row = {
        WORKING: agent.hl_working,
        BLOCKED_INTERNAL: agent.hl_experts,
        BLOCKED_USER: agent.hl_human,
        "oldest_wait": agent.hl_oldest_wait,
    }
    return {
        **row,
        "state": _state(
            {
                "working": row[WORKING],
                "blocked_internal": row[BLOCKED_INTERNAL],
                "blocked_user": row[BLOCKED_USER],
            }
        ),
    }


def annotated_quality(agent: Any) -> dict[str, int]:
    """The quality counts of an agent read from `agent_annotations`."""
    keys = ["valid", "invalid", "trusted", *ReviewStatus.values]
    return {key: getattr(agent, f"hl_{key}") for key in keys}
