"""Celery tasks of runs: thin wrappers that load by id and call a service."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from config.enqueue import enqueue
from delegation.runner import run_advance
from delegation.sweeper import runs_recover_orphans, runs_sweep


@shared_task(bind=True, name="delegation.advance_run", max_retries=20)
def advance_run(self, run_id: str) -> str:  # noqa: ANN001  (Celery's bound task)
    """Advance one run; a delivery that finds it leased by a live worker retries later."""
    outcome = run_advance(run_id=run_id, worker=self.request.hostname or "")
    if outcome.retry_in and not self.request.called_directly:
        raise self.retry(countdown=outcome.retry_in)
    if outcome.continue_later:
        enqueue(advance_run, run_id)
    return outcome.status


@shared_task(name="delegation.sweep_runs", ignore_result=True)
def sweep_runs() -> dict[str, int]:
    """Beat-driven: deadlines, dead workers and lost tasks (see delegation.sweeper)."""
    return runs_sweep()


@worker_ready.connect
def recover_orphans(sender, **kwargs: object) -> None:  # noqa: ANN001  (Celery's signal)
    """A (re)started worker re-sends the runs it was running when it died, without waiting."""
    runs_recover_orphans(worker=sender.hostname)
