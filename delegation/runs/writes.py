"""A run's own writes under its worker's lease (fenced), and its end by anyone else."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from delegation.models import Run, RunStatus
from delegation.runs.fenced import (
    FINISH_ANY,
    FINISH_HELD,
    FINISH_JUDGED,
    HEARTBEAT,
    PROGRESS,
    RELEASE,
    WAIT,
    held,
    working,
)
from delegation.runs.hooks import HOOKS
from delegation.runs.spans import run_ended_observed


class RunStopped(Exception):
    """The run was cancelled, ended or taken over elsewhere: this worker must stop on it."""


def _lease() -> Any:
    return timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)


def run_heartbeat(*, run: Run, seq: int | None = None) -> None:
    """Renew the lease (and save the last event number sent, never lowering it: a stream's
    checkpoint can land after its step's own save); RunStopped if not ours."""
    if not HEARTBEAT.run(**held(run), lease_expires_at=_lease(), last_seq=seq or 0):
        raise RunStopped


def run_save_progress(*, run: Run) -> None:
    """Persist transcript, steps, usage and seq and renew the lease; RunStopped if not ours."""
    values = dict(routing=run.routing, lease_expires_at=_lease())
    if not PROGRESS.run(**held(run), **working(run), **values):
        raise RunStopped


def run_wait(*, run: Run, status: str = RunStatus.WAITING) -> None:
    """Save the run as waiting (`status`) without a worker, fenced by its lease (RunStopped if
    not ours), with no read of what it waits for: for a step whose experts started in its own
    uncommitted transaction, which none of them can have ended."""
    values = dict(status=status, waiting_since=timezone.now())
    if not WAIT.run(**held(run), **working(run), **values):
        raise RunStopped


def run_release(*, run: Run) -> None:
    """Hand a running run back to the queue (its task re-enqueues it to continue)."""
    if not RELEASE.run(**held(run), **working(run), queued_at=timezone.now()):
        raise RunStopped


def run_finish(
    *, run: Run, status: str, answer: str = "", error: dict[str, str] | None = None
) -> bool:
    """End a run by its own worker, fenced by its lease; False if it is no longer this
    worker's (or had ended). A run that answered also saves the check of its answer and the
    turn's confidence (`validation`, `confidence`, `needs_review`: only its worker sets them)."""
    ending = _ending(run, status, answer, error)
    if status == RunStatus.SUCCEEDED:
        judged = dict(
            validation=run.validation, confidence=run.confidence, needs_review=run.needs_review
        )
        updated = FINISH_JUDGED.run(**held(run), **working(run), **ending, **judged)
    else:
        updated = FINISH_HELD.run(**held(run), **working(run), **ending)
    return _ended(run, ending, updated)


def run_finish_elsewhere(*, run: Run, status: str, error: dict[str, str] | None = None) -> bool:
    """End a run from outside its worker (a stop, the sweeper, a watchdog), whoever holds it;
    False if it had already ended."""
    ending = _ending(run, status, "", error)
    return _ended(run, ending, FINISH_ANY.run(id=run.pk, **working(run), **ending))


def _ending(run: Run, status: str, answer: str, error: dict[str, str] | None) -> dict[str, Any]:
    return dict(
        status=status,
        answer=answer,
        citations=run.citations if status == RunStatus.SUCCEEDED else [],
        error=error,
        finished_at=timezone.now(),
    )


def _ended(run: Run, ending: dict[str, Any], updated: int) -> bool:
    """The ending as `run` in memory now holds it; whether the row took it (then, once that
    commits, it is counted and its trace span written)."""
    for name, value in (ending | {"lease_expires_at": None}).items():
        setattr(run, name, value)
    if updated:
        for finished in HOOKS.run_finished:  # (routing: counted with the end, in its commit)
            finished(run)
        transaction.on_commit(partial(run_ended_observed, run), robust=True)
    return bool(updated)
