"""What a run waits for (experts, a person), its wait without a worker, and its resumption."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from config.db import row_or_none
from config.db.prepared import PreparedLookup
from delegation.models import FINAL_STATUSES, WAIT_STATUSES, Run, RunStatus
from delegation.runs.claim import NONE_ENDED, HandOver, _ready
from delegation.runs.fenced import (
    RESUMED,
    RESUMED_CLAIMED,
    WAITS_ON,
    claimed,
)
from delegation.runs.hooks import HOOKS
from delegation.runs.writes import run_wait


def with_waits(runs: QuerySet[Run], *, besides: Any = None) -> QuerySet[Run]:
    """`runs` with what each still waits for, read in the same statement (`waits_of` reads it
    back): `person` (an inbox item pending) and `expert` (an expert working; `besides`: other
    than the expert of that key, one ending in this transaction)."""
    person = HOOKS.person_waits()  # (an inbox item pending: delegation.humans)
    expert = Run.objects.filter(parent_id=OuterRef("pk")).exclude(status__in=FINAL_STATUSES)
    if besides is not None:
        expert = expert.exclude(pk=besides)
    return runs.annotate(person=person, expert=Exists(expert))


@dataclass(frozen=True)
class Waits:
    """What a run still waits for: a person (an inbox item pending), an expert working."""

    person: bool
    expert: bool

    def status(self) -> str | None:
        """`waiting_human`, `waiting`, or None when nothing is left to wait for."""
        if self.person:
            return RunStatus.WAITING_HUMAN
        return RunStatus.WAITING if self.expert else None


def waits_of(row: Run) -> Waits:
    """What a run read `with_waits` waits for."""
    return Waits(person=row.person, expert=row.expert)


# The turn's counters on its root, refreshed in memory when a run goes on after its experts
# ended (the checks its answer is rated from: delegation.humans.reviews).
COUNTERS = ("tree_model_calls", "tree_delegations", "tree_checks")


def _waits_for(runs: QuerySet[Run]) -> QuerySet[Run]:
    return with_waits(runs.only("pk"))


def _waits_and_counters(runs: QuerySet[Run]) -> QuerySet[Run]:
    """What each run waits for, with the turn's counters (its own, or its root's)."""
    counters = (*COUNTERS, *(f"root__{name}" for name in COUNTERS))
    return with_waits(runs.select_related("root").only("pk", "root_id", *counters))


# What a run waits for, read at each of its steps that asked (and, locked, before it waits):
# compiled once per connection.
_WAITS = PreparedLookup(
    lambda run_id: _waits_for(Run.objects.filter(pk=run_id)), keys=[Run._meta.pk]
)


_WAITS_LOCKED = PreparedLookup(
    lambda run_id: _waits_and_counters(
        Run.objects.select_for_update(of=("self",)).filter(pk=run_id)
    ),
    keys=[Run._meta.pk],
)


def run_wait_status(*, run_id: Any) -> str | None:
    """What the run still waits for: `waiting_human` while an inbox item of it is pending,
    `waiting` while an expert of it works, None when nothing (it can go on, or is gone)."""
    row = _WAITS.row(run_id)
    return None if row is None else waits_of(row).status()


def run_wait_or_continue(*, run: Run) -> bool:
    """After starting delegations or asking a person: True if the run must wait (experts still
    working, or an inbox item pending), in which case it is saved as waiting without a worker;
    False if nothing is left to wait for (go on, nothing saved)."""
    with transaction.atomic(savepoint=False):  # (within a step that only asked experts)
        # The run's row lock, what it waits for and the turn's counters, in one statement.
        row = _WAITS_LOCKED.row(run.pk)
        status = None if row is None else waits_of(row).status()
        if status is None:
            # Its experts may have ended meanwhile, after their checks and calls were counted
            # on the root: the run goes on with the counters as they are now.
            if row is not None:
                counted = row.root_or_self
                for name in COUNTERS:
                    setattr(run.root_or_self, name, getattr(counted, name))
            return False
        run_wait(run=run, status=status)
    return True


def run_resume_if_ready(
    *,
    run_id: Any,
    locked: Run | None = None,
    waits: Waits | None = None,
    hand_over: HandOver | None = None,
    experts_ended: Mapping[str, Run] = NONE_ENDED,
) -> bool:
    """Re-enqueue a waiting run once nothing is left to wait for (True), or move it between
    `waiting` and `waiting_human` as what it waits for changes. Call inside a transaction:
    the run's row lock makes the last of several concurrent ends resume it exactly once.

    `locked`: the run, already read with that lock in this transaction, and `waits`, what it
    waited for as that statement read it (`with_waits`). Nothing left to wait for, read then,
    is still true (only the run itself adds to what it waits for, and at worst it is resumed,
    finds its experts working and waits again); anything still waited for is read again after
    the lock, which sees whatever was committed while the lock was awaited. `hand_over`: the
    task body that may run it next, claimed at once (`_ready`), with `experts_ended`, the
    expert whose end resumes it.
    """
    run = (
        locked
        if locked is not None
        else row_or_none(Run.objects.select_for_update().filter(pk=run_id))
    )
    if run is None or run.status not in WAIT_STATUSES:
        return False  # still running (it will see the change itself), or ended
    # "Nothing left", read with the lock, holds; anything else is read now, after the lock (a
    # change committed while it was awaited, a sibling stopped or a person's answer, is only
    # seen by a statement after it).
    nothing_left = waits is not None and waits.status() is None
    status = None if nothing_left else run_wait_status(run_id=run.pk)
    if status is not None:
        if status != run.status:
            run.status = status
            WAITS_ON.save(run)
        return False
    run.queued_at, run.waiting_since = timezone.now(), None
    if _ready(run, hand_over, experts_ended=experts_ended):
        RESUMED_CLAIMED.run(
            id=run.pk,
            **claimed(run),
            queued_at=run.queued_at,
            waiting_since=None,
        )
    else:
        RESUMED.run(id=run.pk, queued_at=run.queued_at)
    return True
