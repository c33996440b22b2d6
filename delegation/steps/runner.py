"""One delivery of a run to a worker: claim it, take its steps until it waits or ends, end it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone, translation

from agents.providers.base import ProviderError
from delegation.models import Run, RunStatus
from delegation.routing.services import route_turn
from delegation.runs.claim import Claimed, Handed, HandOver, run_claim
from delegation.runs.emitter import RunEmitter
from delegation.runs.ending import run_end, run_failure
from delegation.runs.hooks import HOOKS
from delegation.runs.lease import LeaseKeeper
from delegation.runs.spans import queue_wait_observe, run_traced
from delegation.runs.writes import RunStopped, run_release
from delegation.steps.step import Delivery, StepKind, run_step
from delegation.usage.services import run_usage_from_ledger

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdvanceOutcome:
    """What one delivery of advance_run did: `retry_in` > 0 asks the task to try again later."""

    status: str
    retry_in: float = 0.0
    continue_later: bool = False


def run_advance(
    *,
    run_id: Any,
    worker: str = "",
    task_started: float | None = None,
    handed: Handed | None = None,
    hand_over: HandOver | None = None,
) -> AdvanceOutcome:
    """Advance a run until it answers, fails, waits for experts, or should continue later;
    `worker` names the process (its Celery hostname) so a restart can find its orphans, and
    `task_started` (monotonic) is when its task began, when it ran other runs first.
    `handed`: the run as the commit that made it ready handed it to this task body;
    `hand_over`: where this delivery hands on the first run it makes ready, for the task body
    to run next (None: everything goes to the queue)."""
    claiming = time.monotonic()
    claimed, retry_in = run_claim(run_id=run_id, worker=worker, handed=handed)
    if claimed is None:
        return AdvanceOutcome("busy" if retry_in else "noop", retry_in=retry_in)
    # Its messages, tool results and failure notes are in the user's language.
    with translation.override(claimed.run.language or None):
        return _deliver(claimed, claiming, hand_over, task_started or time.monotonic())


def run_has_time(task_started: float) -> bool:
    """Whether a task that began at `task_started` (monotonic) may still make a model call
    within its soft time limit."""
    elapsed = time.monotonic() - task_started
    return elapsed + settings.MODEL_CALL_WORST_SECONDS <= settings.CELERY_TASK_SOFT_TIME_LIMIT


def _deliver(
    claimed: Claimed, claiming: float, hand_over: HandOver | None, task_started: float
) -> AdvanceOutcome:
    """One delivery of a claimed run, under its lease; any failure ends it with a plain note."""
    run = claimed.run
    emitter = RunEmitter(run, foreign=claimed.taken_over, since=claiming)
    if claimed.taken_over:  # its dead worker may have charged calls it never saved
        run.usage = run_usage_from_ledger(run_id=run.id)
    else:
        queue_wait_observe(run)
    try:
        with LeaseKeeper(run) as lease, run_traced(run):
            delivery = Delivery(run, emitter, lease, hand_over, claimed.experts_ended)
            return _advance(delivery, task_started)
    except RunStopped:
        return AdvanceOutcome("stopped")  # whoever ended the run closed its messages
    except ProviderError as exc:
        error = run_failure(exc.code, exc.message)
        return _end(run, emitter, hand_over, RunStatus.FAILED, error=error)
    except Exception as exc:
        logger.exception("run %s failed", run.id)
        error = run_failure("internal_error", repr(exc))
        return _end(run, emitter, hand_over, RunStatus.FAILED, error=error)


def _advance(delivery: Delivery, task_started: float) -> AdvanceOutcome:
    run, emitter = delivery.run, delivery.emitter
    if run.parent_id is None and run.routing is None:
        route_turn(run=run, emitter=emitter)  # once per turn, before the entry agent's first step
    while True:
        delivery.lease.check()
        if timezone.now() > run.deadline:
            error = run_failure("run_timeout", "The run went past its deadline.")
            return _end(run, emitter, delivery.hand_over, RunStatus.TIMED_OUT, error=error)
        result = run_step(delivery)
        if result.kind is StepKind.WAITING:
            return AdvanceOutcome(RunStatus.WAITING)
        if result.kind is StepKind.ENDED:
            return AdvanceOutcome(RunStatus.SUCCEEDED)
        if result.kind is StepKind.ANSWERED:
            return _answered(delivery, result.answer, result.checks)
        if not run_has_time(task_started):
            run_release(run=run)
            return AdvanceOutcome(RunStatus.QUEUED, continue_later=True)


def _answered(
    delivery: Delivery, answer: str, checks: list[tuple[str, dict[str, Any]]] | None
) -> AdvanceOutcome:
    """End a run that answered, after its answer was judged where its agent asks for it (the
    `answer_judged` hook: a check, a fallback attempt started before this run ends so its
    caller keeps waiting, the entry agent's answer rated from the turn's `checks`)."""
    run, emitter = delivery.run, delivery.emitter
    HOOKS.answer_judged(
        run=run, emitter=emitter, answer=answer, checks=checks, hand_over=delivery.hand_over
    )
    # (saves the quality too)
    return _end(run, emitter, delivery.hand_over, RunStatus.SUCCEEDED, answer=answer)


def _end(
    run: Run,
    emitter: RunEmitter,
    hand_over: HandOver | None,
    status: str,
    *,
    answer: str = "",
    error: dict[str, str] | None = None,
) -> AdvanceOutcome:
    """End the run by its worker; its caller, resumed, may be handed over to this task body."""
    ended = run_end(
        run=run, emitter=emitter, status=status, answer=answer, error=error, hand_over=hand_over
    )
    if not ended:
        return AdvanceOutcome("stopped")
    if error:
        HOOKS.activity(
            kind="error",
            run=run,
            summary=f"{run.agent_config['display_name']} {status}: {error['message']}",
            data={"code": error["code"], "detail": error.get("detail", "")[:500]},
        )
    return AdvanceOutcome(status)
