"""What a run reads once and keeps for its later deliveries in the same process.

A run that waits for its experts is delivered again when they are done, usually by the same
worker (its expert's end resumes it there). Each delivery read the same things again for its
next model call: the experts it may be offered, its routing policy and the routing memory its
prompt shows. They are kept here per run instead, for as long as the process holds few
enough runs (`RUNS`, the oldest dropped first). What is kept is what the model is offered, not
what it is allowed: a delegation is checked against the agents as they are when it is asked
(`delegation.tree.guards.delegation_check`). `RUN_READS_CACHE=false` turns the cache off (every
delivery reads again), for debugging an incident.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings

from config.db.per_process import PerProcess

T = TypeVar("T")
RUNS = 1000  # runs whose reads are kept; a process works on far fewer at once


class _Reads:
    """The reads of the runs this process worked on most recently."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: OrderedDict[Any, dict[str, Any]] = OrderedDict()

    def get(self, run_id: Any, name: str, compute: Callable[[], T]) -> T:
        with self._lock:
            reads = self._runs.get(run_id)
            if reads is not None and name in reads:
                self._runs.move_to_end(run_id)
                return reads[name]
        value = compute()  # outside the lock: a read of the database
        self.put(run_id, name, value)
        return value

    def put(self, run_id: Any, name: str, value: Any) -> None:
        with self._lock:
            self._runs.setdefault(run_id, {})[name] = value
            self._runs.move_to_end(run_id)
            while len(self._runs) > RUNS:
                self._runs.popitem(last=False)


_READS = PerProcess(_Reads)


def per_run(run: Any, name: str, compute: Callable[[], T]) -> T:
    """`compute()` for this run, read at its first delivery in this process and kept for the
    next ones (by the run's key and `name`); read every time with the cache off."""
    if not settings.RUN_READS_CACHE:
        return compute()
    return _READS.get().get(run.pk, name, compute)
