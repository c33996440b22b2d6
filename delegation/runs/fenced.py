"""A run's own writes, each an UPDATE compiled once per connection (config/db/prepared.py).

A worker writes its run only while the run is `running` under the worker's lease token (the
fence: a worker whose lease was taken over writes nothing). These statements are made at every
step of every run; through the ORM each cost 120-200 µs of query building per call, against
10-20 µs to run. Values are given by field name; `id` and `lease_token` name the run and the
lease.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import F, QuerySet
from django.db.models.functions import Greatest

from config.db import SameAs
from config.db.prepared import Param, PreparedSave, PreparedUpdate
from delegation.models import FINAL_STATUSES, Run, RunStatus

# What a worker keeps of a run's working state at each save.
WORKING = ("transcript", "references", "steps", "usage", "last_seq", "reserved_call")


def _value(name: str) -> Param:
    return Param(name, Run._meta.get_field(name))


def _values(*names: str) -> dict[str, Param]:
    return {name: _value(name) for name in names}


def _by_id() -> QuerySet[Run]:
    return Run.objects.filter(pk=Param("id", Run._meta.pk))


def _held() -> QuerySet[Run]:
    """Runs this worker still holds: running, under its own lease token (None as the ORM's
    `lease_token=None` reads it: IS NULL)."""
    return Run.objects.filter(
        SameAs(F("lease_token"), _value("lease_token")),
        pk=Param("id", Run._meta.pk),
        status=RunStatus.RUNNING,
    )


# What a claim writes of the run it takes.
CLAIMED = ("status", "started_at", "lease_expires_at", "lease_token", "worker")
CLAIM = PreparedSave(Run, *CLAIMED)
# The lease renewed, and the last event number sent, never lowered (a stream's checkpoint can
# land after its step's own save).
HEARTBEAT = PreparedUpdate(
    lambda: (
        _held(),
        {
            "lease_expires_at": _value("lease_expires_at"),
            "last_seq": Greatest("last_seq", _value("last_seq")),
        },
    )
)
# A step's save.
PROGRESS = PreparedUpdate(lambda: (_held(), _values(*WORKING, "routing", "lease_expires_at")))
# The run waits (for its experts or a person) without a worker (the step that asked them can
# be saved by its wait).
WAIT = PreparedUpdate(
    lambda: (
        _held(),
        {
            **_values(*WORKING, "status", "waiting_since"),
            "lease_expires_at": None,
            "lease_token": None,
        },
    )
)
# The run goes back to the queue, its task to continue it.
RELEASE = PreparedUpdate(
    lambda: (
        _held(),
        {
            **_values(*WORKING, "queued_at"),
            "status": RunStatus.QUEUED,
            "lease_expires_at": None,
            "lease_token": None,
        },
    )
)

# A waiting run whose experts and people are done goes back to the queue; one still waiting
# moves between `waiting` and `waiting_human` (by whoever ended what it waited for, under the
# run's row lock: not fenced).
RESUMED = PreparedUpdate(
    lambda: (
        _by_id(),
        {
            "status": RunStatus.QUEUED,
            "queued_at": _value("queued_at"),
            "waiting_since": None,
        },
    )
)
WAITS_ON = PreparedSave(Run, "status")
# ...or is resumed claimed already, by the worker that runs it next (delegation.runs.claim).
RESUMED_CLAIMED = PreparedUpdate(
    lambda: (_by_id(), _values(*CLAIMED, "queued_at", "waiting_since"))
)
# A run claimed in advance by a worker that will not run it after all goes back to the queue.
HANDED_BACK = PreparedUpdate(
    lambda: (
        _held(),
        {
            "status": RunStatus.QUEUED,
            "queued_at": _value("queued_at"),
            "lease_expires_at": None,
            "lease_token": None,
        },
    )
)

_ENDING = ("status", "answer", "citations", "error", "finished_at")
_JUDGED = ("validation", "confidence", "needs_review")


def _finish(runs: Callable[[], QuerySet[Run]], *names: str) -> PreparedUpdate:
    """The run (of `runs()`) ends with these values (not if it already has)."""
    return PreparedUpdate(
        lambda: (
            runs().exclude(status__in=FINAL_STATUSES),
            {**_values(*_ENDING, *WORKING, *names), "lease_expires_at": None},
        )
    )


# The run ends under its worker's lease: having answered, with the check of its answer (only
# its worker judges it), or not.
FINISH_JUDGED = _finish(_held, *_JUDGED)
FINISH_HELD = _finish(_held)
# ...or by anyone (a stop, the sweeper, a watchdog).
FINISH_ANY = _finish(_by_id)


def held(run: Run) -> dict[str, Any]:
    """The values naming `run` under its worker's lease."""
    return {"id": run.pk, "lease_token": run.lease_token}


def working(run: Run) -> dict[str, Any]:
    """The values of `run`'s working state as it is now."""
    return {name: getattr(run, name) for name in WORKING}


def claimed(run: Run) -> dict[str, Any]:
    """The values a claim leaves on `run`, as it is now (`CLAIMED`)."""
    return {name: getattr(run, name) for name in CLAIMED}
