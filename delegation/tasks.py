"""Celery tasks of runs: thin wrappers that load by id and call a service."""

from __future__ import annotations

import time
from contextlib import nullcontext

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from config.enqueue import Kept, enqueue, keeping_next
from delegation.runner import run_advance, run_has_time
from delegation.services import run_hand_back
from delegation.sweeper import runs_recover_orphans, runs_sweep


@shared_task(bind=True, name="delegation.advance_run", max_retries=20)
def advance_run(self, run_id: str) -> str:  # noqa: ANN001  (Celery's bound task)
    """Advance one run, then the run it made ready (the expert it asked, or the caller its end
    resumed) while time allows, without a queue round trip; a delivery that finds a run leased
    by a live worker retries later."""
    started = time.monotonic()
    while True:
        keeping = keeping_next(self.name) if settings.RUN_HAND_OVER else nullcontext(Kept(""))
        with keeping as kept:
            outcome = run_advance(
                run_id=run_id, worker=self.request.hostname or "", task_started=started
            )
        if outcome.retry_in and not self.request.called_directly:
            _send_back(kept)  # (a run this delivery could not claim made nothing ready)
            raise self.retry(args=[run_id], countdown=outcome.retry_in)
        if outcome.continue_later:
            enqueue(advance_run, run_id)
        if kept.args is None:
            return outcome.status
        if not run_has_time(started):
            _send_back(kept)
            return outcome.status
        (run_id,) = kept.args


def _send_back(kept: Kept) -> None:
    """The run this task body kept, sent to the queue after all: no longer claimed by it."""
    if kept.args is not None:
        run_hand_back(run_id=kept.args[0])
    kept.send()


@shared_task(name="delegation.sweep_runs", ignore_result=True)
def sweep_runs() -> dict[str, int]:
    """Beat-driven: deadlines, dead workers and lost tasks (see delegation.sweeper)."""
    return runs_sweep()


@worker_ready.connect
def recover_orphans(sender, **kwargs: object) -> None:  # noqa: ANN001  (Celery's signal)
    """A (re)started worker re-sends the runs it was running when it died, without waiting."""
    runs_recover_orphans(worker=sender.hostname)
