"""Running an eval run: its cases one after the other, each as a real turn of a sandbox user,
judged once the turn ends. One task holds a run at a time (a lease); a task works for at most
EVALS_TASK_SLICE_SECONDS and then hands the run back to the queue, so it never holds a worker
for a whole suite while the turns it waits for need workers too."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.selectors import agent_usable_by
from chat.models import ChatSession
from config.enqueue import enqueue
from config.errors import AppError
from delegation.evals.checks import case_status, expectations_check
from delegation.evals.evidence import turn_evidence
from delegation.evals.gate import draft_decide
from delegation.evals.judge import rubric_grade
from delegation.evals.models import (
    CASE_FINAL,
    CaseStatus,
    EvalCaseResult,
    EvalRun,
    EvalRunStatus,
)
from delegation.evals.overrides import root_run_pin, root_run_routing
from delegation.evals.sandbox import sandbox_acquire, sandbox_extend, sandbox_release
from delegation.evals.services import ADVANCE, stale_after
from delegation.evals.waits import turn_waits_decide, waits_text
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from delegation.turns import turn_start, turn_stop

POLL_SECONDS = 0.2


class LeaseLost(Exception):
    """Another task took the run over (this one was presumed dead)."""


def eval_run_advance(*, run_id: Any, slice_seconds: float | None = None) -> str:
    """Advance an eval run until it ends, or for `slice_seconds` (then re-enqueue it). A
    delivery that finds it held by a live task, or ended, does nothing."""
    token = _claim(run_id)
    if token is None:
        return "noop"
    started = time.monotonic()
    try:
        while True:
            run = EvalRun.objects.select_related("suite__agent").get(pk=run_id)
            _renew(run_id, token)
            if run.status == EvalRunStatus.CANCELLED:
                _cancel_open(run)
                return "cancelled"
            result = run.results.exclude(status__in=CASE_FINAL).order_by("position").first()
            if result is None:
                _finish(run)
                return "finished"
            if result.status == CaseStatus.PENDING:
                case_start(run=run, result=result)
            elif not case_poll(run=run, result=result):
                if slice_seconds is not None and time.monotonic() - started > slice_seconds:
                    _release(run_id, token)
                    token = None
                    enqueue(ADVANCE, str(run_id))
                    return "continues"
                time.sleep(POLL_SECONDS)
    except LeaseLost:
        token = None
        return "taken over"
    finally:
        if token is not None:
            _release(run_id, token)


def _claim(run_id: Any) -> uuid.UUID | None:
    now = timezone.now()
    token = uuid.uuid4()
    claimed = (
        EvalRun.objects.filter(pk=run_id)
        .filter(Q(lease_token__isnull=True) | Q(lease_expires_at__lt=now))
        .exclude(status__in=[EvalRunStatus.FINISHED, EvalRunStatus.FAILED])
        .update(lease_token=token, lease_expires_at=_lease())
    )
    if not claimed:
        return None
    EvalRun.objects.filter(pk=run_id, status=EvalRunStatus.QUEUED).update(
        status=EvalRunStatus.RUNNING, started_at=now
    )
    return token


def _lease() -> Any:
    return timezone.now() + timedelta(seconds=settings.EVALS_LEASE_SECONDS)


def _renew(run_id: Any, token: uuid.UUID) -> None:
    if not EvalRun.objects.filter(pk=run_id, lease_token=token).update(lease_expires_at=_lease()):
        raise LeaseLost


def _release(run_id: Any, token: uuid.UUID) -> None:
    EvalRun.objects.filter(pk=run_id, lease_token=token).update(
        lease_token=None, lease_expires_at=stale_after()
    )


def case_start(*, run: EvalRun, result: EvalCaseResult) -> None:
    """Start the case's turn as a sandbox user, in a new session with its earlier turns, with
    the run's drafts and model pinned; a case that cannot start ends as an error."""
    suite, case = run.suite, result.case_snapshot
    user = sandbox_acquire(seconds=_lease_seconds(suite.case_timeout), profile=case["user"])
    agent = suite.agent
    problem = ""
    if not agent.enabled:
        problem = f"The suite's agent {agent.name} is disabled."
    elif not agent_usable_by(agent=agent, user=user):
        problem = f"The case's user may not use {agent.name} (its access group or permission)."
    if problem:
        _case_end(run, result, user, status=CaseStatus.ERROR, error=problem)
        return
    session = ChatSession.objects.create(
        id=uuid.uuid4(), user=user, agent=agent, title=f"Eval {suite.name}: {result.name}"[:200]
    )
    _prior_turns(session, user, agent, case["prior_turns"])
    try:
        with transaction.atomic():  # the turn is enqueued when this commits, re-pinned by then
            sent = turn_start(
                user=user,
                session_id=session.id,
                message_id=uuid.uuid4(),
                text=case["message"],
                flags=case["flags"],
            )
            root_run_pin(run=sent.run, overrides=run.overrides, model=run.model)
            if sent.run is not None:  # (a new message always has its run)
                root_run_routing(run=sent.run, overrides=run.overrides)
            now = timezone.now()
            result.root_run_id, result.session_id = sent.run.pk, session.pk
            result.sandbox_user = user.get_username()
            result.status, result.started_at = CaseStatus.RUNNING, now
            result.deadline = now + timedelta(seconds=suite.case_timeout)
            result.save()
    except AppError as exc:
        _case_end(run, result, user, status=CaseStatus.ERROR, error=exc.message)


def _lease_seconds(case_timeout: int) -> float:
    """How long a sandbox is held for a case: its timeout, the judge, and some slack."""
    return case_timeout + settings.EVALS_JUDGE_TIMEOUT + settings.EVALS_LEASE_SECONDS


def _prior_turns(session: ChatSession, user: Any, agent: Any, turns: list[dict[str, str]]) -> None:
    """Earlier turns as finished turns of the session: the agent sees them as history."""
    history: list[dict[str, str]] = []
    for turn in turns:
        history.append({"role": "user", "content": turn["user"]})
        run = run_create(
            agent=agent, user=user, session=session, task=turn["user"], transcript=history
        )
        now = timezone.now()
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.SUCCEEDED,
            answer=turn["assistant"],
            started_at=now,
            finished_at=now,
            tree_model_calls=0,  # (written, not run: no call was made)
        )
        history.append({"role": "assistant", "content": turn["assistant"]})


def case_poll(*, run: EvalRun, result: EvalCaseResult) -> bool:
    """Judge the case if its turn ended (or stop it past the case's timeout); True when the
    case is done."""
    root = Run.objects.filter(pk=result.root_run_id).first()
    user = _sandbox_user(result)
    if root is None:
        _case_end(run, result, user, status=CaseStatus.ERROR, error="The case's turn is gone.")
        return True
    error = ""
    if not root.is_final:
        _waits_decided(result, root)
        if timezone.now() <= result.deadline:
            if user is not None:
                sandbox_extend(user=user, seconds=_lease_seconds(run.suite.case_timeout))
            return False
        turn_stop(run=root)
        root.refresh_from_db()
        error = f"The case took longer than {run.suite.case_timeout} s; its turn was stopped."
        waits = (result.evidence or {}).get("waits", [])
        if waits:
            error += f" It {waits_text(waits)}."
    _case_judge(run, result, root, user, error)
    return True


def _waits_decided(result: EvalCaseResult, root: Run) -> None:
    """The turn's waits for a person, decided as the case says, kept with the result."""
    decided = turn_waits_decide(root=root, expect=result.case_snapshot["expect"])
    if decided:
        waits = (result.evidence or {}).get("waits", [])
        result.evidence = {**(result.evidence or {}), "waits": [*waits, *decided]}
        result.save(update_fields=["evidence"])


def _case_judge(run: EvalRun, result: EvalCaseResult, root: Run, user: Any, error: str) -> None:
    case = result.case_snapshot
    evidence = {**turn_evidence(root=root), "waits": (result.evidence or {}).get("waits", [])}

    def grade(rubric: str, found: dict[str, Any]) -> tuple[str, str]:
        return rubric_grade(
            rubric=rubric, evidence=found, message=case["message"], model=run.suite.judge_model
        )

    outcomes = expectations_check(case["expect"], evidence, grade)
    turn_ok = root.status == RunStatus.SUCCEEDED and not error
    if not error and not turn_ok:
        error = f"The turn ended {root.status}: {(root.error or {}).get('message', '')}".strip()
    result.expectations = outcomes
    result.evidence = evidence
    result.latency_ms = evidence["latency_ms"]
    result.tokens = evidence["tokens"]
    result.model_calls = evidence["model_calls"]
    result.cost = evidence["cost"]
    _case_end(run, result, user, status=case_status(outcomes, turn_ok=turn_ok), error=error)


def _sandbox_user(result: EvalCaseResult) -> Any:
    session = ChatSession.objects.filter(pk=result.session_id).select_related("user").first()
    return session.user if session else None


def _case_end(
    run: EvalRun, result: EvalCaseResult, user: Any, *, status: str, error: str = ""
) -> None:
    """Record the case's verdict, count it on the run and give the sandbox back (wiped)."""
    result.status, result.error = status, error[:2000]
    result.finished_at = timezone.now()
    result.save()
    counts: dict[str, Any] = {"done": F("done") + 1}
    if status == CaseStatus.PASSED:
        counts["passed"] = F("passed") + 1
    elif status != CaseStatus.CANCELLED:
        counts["failed"] = F("failed") + 1
    EvalRun.objects.filter(pk=run.pk).update(**counts)
    if user is not None:
        sandbox_release(user=user)


def _cancel_open(run: EvalRun) -> None:
    """A cancelled run: stop the turn of the case in progress, and run no other."""
    for result in run.results.exclude(status__in=CASE_FINAL).order_by("position"):
        if result.status == CaseStatus.RUNNING:
            root = Run.objects.filter(pk=result.root_run_id).first()
            if root is not None:
                turn_stop(run=root)
        _case_end(run, result, _sandbox_user(result), status=CaseStatus.CANCELLED)
    _settle(run, EvalRunStatus.CANCELLED)


def _finish(run: EvalRun) -> None:
    _settle(run, EvalRunStatus.FINISHED)


def _settle(run: EvalRun, status: str) -> None:
    """The run's end: its verdict against the threshold, then what the gate does with it. The
    same write gives the lease back: an ended run is held by no task (one that reads it ended
    never sees a task still holding it)."""
    run.refresh_from_db()
    run.status = status
    run.lease_token = None
    run.finished_at = run.finished_at or timezone.now()
    run.succeeded = (
        status == EvalRunStatus.FINISHED
        and run.total > 0
        and run.passed * 100 >= run.threshold * run.total
    )
    run.save(update_fields=["status", "finished_at", "succeeded", "lease_token"])
    if run.draft_id is not None:
        draft_decide(draft=run.draft)
