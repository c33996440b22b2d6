"""The delegation engine's metrics: runs ended, queue waits, model calls, tokens, cost, budget
refusals, sweeps (recorded where each happens), and the runs' state read at each scrape."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min
from django.db.models.functions import Coalesce
from django.utils import timezone

from config.metrics import Reading, counter, histogram, readings_source
from delegation.models import Run, RunStatus

RUNS_ENDED = counter(
    "runs_ended_total",
    "Runs ended, by agent, kind (entry: a turn; sub: an expert's) and final status.",
    ["agent", "kind", "status"],
)
QUEUE_WAIT = histogram(
    "run_queue_wait_seconds",
    "A hop: from a run becoming queued to a worker claiming it.",
    ["kind"],
)
MODEL_CALL = histogram(
    "model_call_seconds",
    "One model call, from the request to its last streamed event.",
    ["provider", "model"],
)
MODEL_CALL_FAILURES = counter(
    "model_call_failures_total",
    "Model calls that failed, by provider and error code.",
    ["provider", "code"],
)
TOKENS = counter(
    "model_tokens_total",
    "Tokens charged, by agent, model and direction (input, output).",
    ["agent", "model", "direction"],
)
COST = counter(
    "model_cost_total",
    "Cost charged for model calls, in USAGE_CURRENCY, by agent and model.",
    ["agent", "model", "currency"],
)
BUDGET_REFUSALS = counter(
    "budget_refusals_total",
    "Work refused by a budget: a model call over a money budget, a tool call over the turn's.",
    ["kind"],
)
RUNS_SWEPT = counter(
    "runs_swept_total",
    "Runs the sweeper found stuck, by what it did (timed_out, resent).",
    ["action"],
)

_ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING, RunStatus.WAITING_HUMAN)


def _runs_state() -> Iterator[Reading]:
    """Runs not ended, by status and agent; the oldest queued run's age."""
    rows = (
        Run.objects.filter(status__in=_ACTIVE)
        .values_list("status", "agent__name")
        .annotate(n=Count("id"))
        .order_by("status", "agent__name")
    )
    yield (
        "runs_active",
        "Runs not ended now, by status and agent.",
        ["status", "agent"],
        [([status, agent or ""], float(n)) for status, agent, n in rows],
    )
    queued = Run.objects.filter(status=RunStatus.QUEUED)
    since = Coalesce("queued_at", "created_at")  # a new run has not been re-queued yet
    oldest: datetime | None = queued.aggregate(oldest=Min(since))["oldest"]
    age = (timezone.now() - oldest).total_seconds() if oldest else 0.0
    yield (
        "oldest_queued_run_seconds",
        "How long the oldest queued run has waited for a worker (0: none waits).",
        [],
        [([], max(age, 0.0))],
    )


readings_source(_runs_state)
