"""Claiming a run for a worker, and handing the next run over to the same task body."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from config.db.prepared import PreparedLookup
from config.enqueue import enqueue
from delegation.models import FINAL_STATUSES, WAIT_STATUSES, Run, RunStatus
from delegation.runs.ended import EndWatch
from delegation.runs.fenced import (
    CLAIM,
    HANDED_BACK,
    HEARTBEAT,
    held,
)
from delegation.runs.transcript import pending_tool_calls
from delegation.runs.writes import _lease

logger = logging.getLogger(__name__)

ADVANCE_RUN = "delegation.advance_run"  # the Celery task (delegation.tasks), enqueued by name


def run_enqueue(*, run_id: Any) -> None:
    """Have a worker advance the run once the current transaction commits."""
    enqueue(ADVANCE_RUN, str(run_id))


NONE_ENDED: Mapping[str, Run] = MappingProxyType({})


@dataclass(frozen=True)
class Handed:
    """A run a task body runs next itself, claimed for it by the commit that made it ready (a
    new expert, or a caller its expert's end resumed): its lease token, the run itself as that
    commit left it when it was loaded with everything its steps use (`run`; else None: its
    claim reads it, without writing), when that commit read it not ended (monotonic), and the
    expert whose end resumed it, by its call id (`experts_ended`: its result needs no read)."""

    run_id: Any
    token: uuid.UUID | None
    run: Run | None = None
    since: float = 0.0
    experts_ended: Mapping[str, Run] = field(default_factory=lambda: NONE_ENDED)


class HandOver:
    """One delivery's offer to run next, in the same task body, the first run it makes ready,
    without a queue round trip (`next`, once the transaction that made it ready commits).

    Handed work is committed but not published: if the process dies before running it, it is
    recovered as its row says (a run handed over claimed, by its expired lease). Further runs
    made ready go to the queue, and so does everything when the transaction that made the first
    ready rolled back (nothing is handed on then)."""

    def __init__(self, *, worker: str) -> None:
        self.worker = worker
        self.next: Handed | None = None
        self._offered = False

    def offer(self, run: Run, *, experts_ended: Mapping[str, Run] = NONE_ENDED) -> bool:
        """In the transaction that makes `run` ready: when it is the delivery's first, set it
        claimed for this worker, as its claim would (True: the caller writes it so)."""
        if self._offered:
            return False
        self._offered = True
        _take(run, worker=self.worker)
        whole = run if _loaded_for_steps(run) else None
        handed = Handed(run.pk, run.lease_token, whole, time.monotonic(), experts_ended)
        transaction.on_commit(partial(self._hand_on, handed))
        return True

    def _hand_on(self, handed: Handed) -> None:
        self.next = handed


# What a run's steps use of its related rows, loaded with it by its claim.
STEPS_USE = ("user", "session", "agent")


def _loaded_for_steps(run: Run) -> bool:
    """Whether `run` in memory has everything its steps use (`with_what_steps_use`)."""
    related = [getattr(Run, name) for name in STEPS_USE]
    if run.root_id is not None:
        related.append(Run.root)
    return all(field.is_cached(run) for field in related)


def _ready(
    run: Run, hand_over: HandOver | None, *, experts_ended: Mapping[str, Run] = NONE_ENDED
) -> bool:
    """Make `run` ready to advance (in the current transaction): handed over to this task
    body, claimed (True: the caller writes it so), or enqueued."""
    if hand_over is not None and hand_over.offer(run, experts_ended=experts_ended):
        return True
    run_enqueue(run_id=run.pk)
    return False


def _take(run: Run, *, worker: str) -> None:
    """Set `run` as a claim leaves it: running for `worker`, under a new lease token (so an
    earlier worker's writes are refused)."""
    run.status = RunStatus.RUNNING
    run.started_at = run.started_at or timezone.now()
    run.lease_expires_at = _lease()
    run.lease_token = uuid.uuid4()
    run.worker = worker[:200]


def run_hand_back(*, handed: Handed) -> None:
    """A run handed over to this task body that it will not run after all: back to the queue,
    unclaimed, so whoever its task is sent to takes it at once."""
    HANDED_BACK.run(id=handed.run_id, lease_token=handed.token, queued_at=timezone.now())
    run_enqueue(run_id=handed.run_id)


# What a run never reads of its root (which can be long: the root's own transcript).
ROOT_UNREAD = tuple(
    f"root__{name}"
    for name in ("transcript", "references", "citations", "answer", "task", "routing_request")
)


def with_what_steps_use(runs: QuerySet[Run]) -> QuerySet[Run]:
    """`runs` with the rows their steps use (`STEPS_USE` and the root), in the same statement."""
    return runs.select_related(*STEPS_USE, "root").defer(*ROOT_UNREAD)


# The claim reads the run with everything its steps use (about 130 columns): compiled once;
# locked, or not (a run handed over claimed already: `HandOver`).
_CLAIMABLE = PreparedLookup(
    lambda run_id: with_what_steps_use(
        Run.objects.select_for_update(of=("self",)).filter(pk=run_id)
    ),
    keys=[Run._meta.pk],
)


_HANDED = PreparedLookup(
    lambda run_id: with_what_steps_use(Run.objects.filter(pk=run_id)), keys=[Run._meta.pk]
)


@dataclass(frozen=True)
class Claimed:
    """A run this worker holds now, and how it came to: `taken_over` from a dead worker (which
    may have sent events it never saved, and made the call reserved for its step), and the
    experts whose end handed it over here, by call id (`experts_ended`: their results need no
    read)."""

    run: Run
    taken_over: bool = False
    experts_ended: Mapping[str, Run] = field(default_factory=lambda: NONE_ENDED)


def run_claim(
    *, run_id: Any, worker: str = "", handed: Handed | None = None
) -> tuple[Claimed | None, float]:
    """Take the run for this worker: (claimed, 0), or (None, seconds to retry in) / (None, 0)
    if there is nothing to do.

    A duplicate delivery finds the run final or waiting (nothing to do) or leased by a live
    worker (retry once the lease could have expired). An expired lease means that worker died:
    take over, with a new lease token so the old worker's writes are refused. A run `handed`
    over to this task body is taken as the commit that claimed it left it (or read, not
    written, when it was not loaded whole) while that claim holds.
    """
    if handed is not None and str(handed.run_id) == str(run_id):
        if handed.run is not None and EndWatch(run_id, since=handed.since).ended():
            return None, 0.0  # stopped since it was handed over: whoever ended it closed it
        run = handed.run or _HANDED.row(run_id)
        ours = run is not None and run.status == RunStatus.RUNNING
        if ours and run.lease_token == handed.token and _still_held(run):
            return Claimed(run, experts_ended=handed.experts_ended), 0.0
    now = timezone.now()
    with transaction.atomic():
        run = _CLAIMABLE.row(run_id)
        if run is None or run.status in FINAL_STATUSES or run.status in WAIT_STATUSES:
            return None, 0.0
        if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > now:
            return None, (run.lease_expires_at - now).total_seconds() + 1
        # A run left `running` by a worker whose lease expired is taken over: that worker may
        # have sent events it never saved (this delivery's event numbers skip ahead), and made
        # the call reserved for its step (this delivery takes its own).
        taken_over = run.status == RunStatus.RUNNING
        if taken_over:
            logger.warning(
                "run %s taken over from worker %r: its lease expired at %s",
                run.pk,
                run.worker,
                run.lease_expires_at,
            )
            if not pending_tool_calls(run.transcript):  # (its reserved call may have been made)
                run.reserved_call = None  # (saved with the run's next write)
        _take(run, worker=worker)
        # As save(update_fields=...) without its signals: nothing listens to a claim.
        if not CLAIM.save(run):  # as save(update_fields=...) says of a row gone meanwhile
            raise DatabaseError("Save with update_fields did not affect any rows.")
    return Claimed(run, taken_over=taken_over), 0.0


def _still_held(run: Run) -> bool:
    """Whether a run claimed in advance is still this worker's to run: its lease has over
    half its length left (none can take it over before the lease keeper renews it), or is
    renewed now, fenced (kept a while, behind a slow tool: whoever took it over since wins)."""
    left = (run.lease_expires_at - timezone.now()).total_seconds()
    if left > settings.RUN_LEASE_SECONDS / 2:
        return True
    run.lease_expires_at = _lease()
    return bool(
        HEARTBEAT.run(**held(run), lease_expires_at=run.lease_expires_at, last_seq=run.last_seq)
    )
