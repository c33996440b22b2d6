"""The periodic check of waits (deadlock prevention): waits that form a cycle, waits past their
timeout, and waits with nothing left to wait for; each reported in the activity log.

A wait is a run in `waiting` (for its experts) or `waiting_human` (for an inbox item). Its
timeout is the waiter's deadline (pushed back by each human wait's SLA). The oldest waiter of a
cycle or of a chain of overdue waits is timed out, which releases everything below it.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from delegation.humans.activity import activity_record
from delegation.humans.models import ActivityKind
from delegation.models import FINAL_STATUSES, WAIT_STATUSES, Run, RunStatus
from delegation.runs.emitter import RunEmitter
from delegation.runs.ended import run_mark_ended
from delegation.runs.ending import run_end_elsewhere, run_failure
from delegation.runs.waits import run_resume_if_ready, run_wait_status
from delegation.tree.report import delegation_complete

logger = logging.getLogger(__name__)
BATCH = 500


def waits_check() -> dict[str, int]:
    """Report and resolve bad waits: {"cycles", "timed_out", "stuck"} found this time."""
    now = timezone.now()
    waiters = {
        r.id: r
        for r in Run.objects.filter(status__in=WAIT_STATUSES).order_by("waiting_since")[:BATCH]
    }
    edges = _edges(waiters)
    cycles = _cycles(edges)
    in_cycle = {run_id for cycle in cycles for run_id in cycle}
    for cycle in cycles:
        _break_cycle([waiters[i] for i in cycle if i in waiters])
    overdue = {i for i, r in waiters.items() if r.deadline < now and i not in in_cycle}
    timed_out = 0
    for run_id in overdue:
        run = waiters[run_id]
        if run.parent_id in overdue:
            continue  # its caller waits longer and is timed out instead, which ends this one
        timed_out += _time_out(run, now)
    stuck = 0
    for run_id, run in waiters.items():
        if run_id in in_cycle or run_id in overdue:
            continue
        stuck += _resume_stuck(run, now)
    return {"cycles": len(cycles), "timed_out": timed_out, "stuck": stuck}


def _edges(waiters: dict[Any, Run]) -> dict[Any, list[Any]]:
    """waiter -> the unfinished runs it waits on (its experts)."""
    edges: dict[Any, list[Any]] = {run_id: [] for run_id in waiters}
    rows = (
        Run.objects.filter(parent_id__in=list(waiters))
        .exclude(status__in=FINAL_STATUSES)
        .values_list("parent_id", "id")
    )
    for parent_id, child_id in rows:
        edges[parent_id].append(child_id)
    return edges


def _cycles(edges: dict[Any, list[Any]]) -> list[list[Any]]:
    """Each cycle of the wait-for graph once (iterative depth-first search)."""
    found: list[list[Any]] = []
    state: dict[Any, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if start in state:
            continue
        path, stack = [], [(start, iter(edges.get(start, [])))]
        state[start] = 1
        path.append(start)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                found.append(path[path.index(child) :])
            elif child not in state and child in edges:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(edges[child])))
    return found


def _break_cycle(cycle: list[Run]) -> None:
    """Time out the oldest waiter of a cycle. Ending it the usual way would stop the runs
    below it, which here lead back to it: it is ended on its own and its caller resumed."""
    oldest = min(cycle, key=lambda r: r.waiting_since or r.created_at)
    names = " → ".join(r.agent_config["name"] for r in cycle)
    logger.warning("wait cycle %s: timing out run %s", names, oldest.id)
    error = run_failure("wait_cycle", f"Waits formed a cycle: {names}.")
    with transaction.atomic():
        ended = Run.objects.filter(pk=oldest.pk, status__in=WAIT_STATUSES).update(
            status=RunStatus.TIMED_OUT, error=error, finished_at=timezone.now()
        )
        if not ended:
            return
        oldest.refresh_from_db()
        run_mark_ended(oldest.id)
        emitter = RunEmitter(oldest, foreign=True)
        emitter.closing = True
        public = {"code": error["code"], "message": error["message"]}
        emitter.emit("run.completed", status=RunStatus.TIMED_OUT, usage=oldest.usage, error=public)
        activity_record(
            kind=ActivityKind.WAIT_CYCLE,
            run=oldest,
            summary=f"Waits formed a cycle ({names}); timed out the oldest waiter",
            data={"cycle": [str(r.id) for r in cycle]},
        )
    if oldest.parent_id:
        delegation_complete(child=oldest)


def _time_out(run: Run, now: Any) -> int:
    """Time out a waiter past its deadline (its end releases what waits below it)."""
    waited = int((now - (run.waiting_since or run.created_at)).total_seconds())
    what = "a person" if run.status == RunStatus.WAITING_HUMAN else "experts"
    ended = run_end_elsewhere(
        run=run,
        status=RunStatus.TIMED_OUT,
        error=run_failure("run_timeout", f"Waited {waited} s, past the run's deadline."),
    )
    if ended:
        activity_record(
            kind=ActivityKind.WAIT_TIMEOUT,
            run=run,
            summary=f"{run.agent_config['display_name']} waited past its deadline "
            f"({waited} s, for {what}); timed out",
            data={"waited_seconds": waited},
        )
    return int(ended)


def _resume_stuck(run: Run, now: Any) -> int:
    """A waiter with nothing left to wait for (a lost wake-up) for longer than a lost task
    would be re-sent (QUEUED_STALE_SECONDS) is resumed, and reported."""
    stale = now - timedelta(seconds=settings.QUEUED_STALE_SECONDS)
    if run.waiting_since is None or run.waiting_since > stale:
        return 0
    if run_wait_status(run_id=run.id) is not None:
        return 0
    with transaction.atomic():
        resumed = run_resume_if_ready(run_id=run.id)
    if resumed:
        logger.warning("run %s waited with nothing to wait for: resumed", run.id)
        activity_record(
            kind=ActivityKind.WAIT_STUCK,
            run=run,
            summary=f"{run.agent_config['display_name']} waited with nothing left to wait for; "
            "resumed",
        )
    return int(resumed)
