"""Celery tasks of evals: thin wrappers that load by id and call a service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from delegation.evals.models import EvalRun, EvalRunStatus
from delegation.evals.services import eval_run_kick
from delegation.evals.stepper import eval_run_advance


@shared_task(name="evals.advance_run", ignore_result=True)
def advance_run(run_id: str) -> str:
    """Advance one eval run for one slice of work (it re-enqueues itself to go on)."""
    return eval_run_advance(run_id=run_id, slice_seconds=settings.EVALS_TASK_SLICE_SECONDS)


@shared_task(name="evals.sweep_runs", ignore_result=True)
def sweep_runs() -> int:
    """Beat-driven: re-send eval runs whose task was lost or whose worker died."""
    runs = EvalRun.objects.filter(status__in=[EvalRunStatus.QUEUED, EvalRunStatus.RUNNING])
    return sum(eval_run_kick(run=run) for run in runs)
