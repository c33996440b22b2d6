"""Celery tasks of runs: thin wrappers that load by id and call a service."""

from __future__ import annotations

import time

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from config.enqueue import enqueue
from delegation.runs.claim import HandOver, run_hand_back
from delegation.steps.runner import run_advance, run_has_time
from delegation.sweeper import runs_recover_orphans, runs_sweep


@shared_task(bind=True, name="delegation.advance_run", max_retries=20)
def advance_run(self, run_id: str) -> str:  # noqa: ANN001  (Celery's bound task)
    """Advance one run, then the run it made ready (the expert it asked, or the caller its end
    resumed) while time allows, without a queue round trip; a delivery that finds a run leased
    by a live worker retries later."""
    started = time.monotonic()
    worker = self.request.hostname or ""
    handed = None
    while True:
        hand_over = _hand_over(worker)
        try:
            outcome = run_advance(
                run_id=run_id,
                worker=worker,
                task_started=started,
                handed=handed,
                hand_over=hand_over,
            )
        except BaseException:  # (a soft time limit too): what it handed on goes to the queue
            if hand_over is not None and hand_over.next is not None:
                run_hand_back(handed=hand_over.next)
            raise
        handed = hand_over.next if hand_over is not None else None
        if outcome.retry_in and not self.request.called_directly:
            # (a run this delivery could not claim made nothing ready: nothing to hand back)
            raise self.retry(args=[run_id], countdown=outcome.retry_in)
        if outcome.continue_later:
            enqueue(advance_run, run_id)
        if handed is None:
            return outcome.status
        if not run_has_time(started):
            run_hand_back(handed=handed)
            return outcome.status
        run_id = str(handed.run_id)


def _hand_over(worker: str) -> HandOver | None:
    """Where a delivery hands on the first run it makes ready, for this task body to run next:
    none when the hand-over is switched off, or tasks run where they are enqueued (tests)."""
    if not settings.RUN_HAND_OVER or settings.TASKS_RUN_SYNC:
        return None
    return HandOver(worker=worker)


@shared_task(name="delegation.sweep_runs", ignore_result=True)
def sweep_runs() -> dict[str, int]:
    """Beat-driven: deadlines, dead workers and lost tasks (see delegation.sweeper)."""
    return runs_sweep()


@worker_ready.connect
def recover_orphans(sender, **kwargs: object) -> None:  # noqa: ANN001  (Celery's signal)
    """A (re)started worker re-sends the runs it was running when it died, without waiting."""
    runs_recover_orphans(worker=sender.hostname)
