"""One object per process, made on first use and made again in a forked child: a worker's
background threads do not survive a fork, so a child must not reuse its parent's.

Every background thread the project starts in a process is listed in PROCESS_THREADS, by the
name it runs under (a pool's threads are named `<prefix>_<n>`); tests/test_process_threads.py
checks that no other is alive after a delegated turn. A new thread is added there, with why.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

PROCESS_THREADS: dict[str, str] = {
    # name (or a pool's prefix): what it does, where; how many, in which mode
    "run-keeper": "delegation.runs.keeper: renews the leases of the runs this process works on and "
    "writes its streams' text so far (one; started by the first run or stream)",
    "events": "chat.events: sends events to the channel layer, each group's in the order they "
    "were emitted, on one event loop and so one Redis connection pool (one; started by the first "
    "event)",
    "inprocess-task": "config.enqueue: runs task bodies after commit when no broker is set "
    "(embedded mode; a pool of INPROCESS_WORKERS)",
    "inprocess-knowledge": "config.enqueue: runs the tasks routed to the knowledge queue "
    "(indexing documents) the same way, beside the chat work, never in front of it (embedded "
    "mode; a pool of INPROCESS_KNOWLEDGE_WORKERS, started by the first upload)",
    "in-process-beat": "config.periodic: embedded mode's stand-in for Celery beat: at start the "
    "runs and documents left before, then the run sweeper and the reminder dispatcher (one, in "
    "an ASGI server with no broker)",
    "run-ends": "delegation.runs.ended: listens on Redis for runs that ended, so a stream of an "
    "ended run falls silent without a Redis read per event (one; distributed mode only)",
    "router": "delegation.routing.decide: the model router's call, bounded by its timeout "
    "(a pool of 4, started by the first routed turn)",
    "validator": "delegation.humans.validation: a validator model's call, bounded by its "
    "timeout (a pool of 4, started by the first answer checked by a model)",
}


def process_thread_listed(name: str) -> bool:
    """Whether a thread named `name` is one of PROCESS_THREADS (or a worker of a listed pool)."""
    prefix, _, number = name.rpartition("_")
    return name in PROCESS_THREADS or (number.isdigit() and prefix in PROCESS_THREADS)


class PerProcess(Generic[T]):
    """Holds this process's `factory()` result (a sender, a renewing thread...)."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._value: T | None = None

    def get(self) -> T:
        """This process's object, made now if it has none yet."""
        value = self._value  # the common case without the lock: a stream asks at every piece
        if value is not None and self._pid == os.getpid():
            return value
        with self._lock:
            if self._value is None or self._pid != os.getpid():
                self._value = self._factory()
                self._pid = os.getpid()
            return self._value

    def current(self) -> T | None:
        """This process's object if it was made, else None (nothing started for nothing)."""
        return self._value if self._pid == os.getpid() else None
