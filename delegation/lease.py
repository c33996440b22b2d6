"""Keeps the leases of the runs a process works on alive while its workers wait on the model.

One thread per process renews every held lease (each every third of its length), so starting a
run costs no thread of its own: with a thread per run, the start (and its hand-over of the GIL)
was 3 % of a run thread's time in a delegation turn, and 100 streaming turns meant 100 more
threads waking under one GIL.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connection

from config.per_process import PerProcess
from delegation.models import Run
from delegation.services import RunStopped, run_heartbeat

logger = logging.getLogger(__name__)


class LeaseKeeper:
    """One run's lease, renewed while the `with` block lasts; notices when the run is no longer
    ours (cancelled, ended or taken over)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.lost = threading.Event()
        self.interval = max(0.2, settings.RUN_LEASE_SECONDS / 3)
        self.due = 0.0

    def __enter__(self) -> LeaseKeeper:
        self.due = time.monotonic() + self.interval
        _keeper().hold(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _keeper().release(self)

    def check(self) -> None:
        """Raise RunStopped once the run was cancelled, ended or taken over."""
        if self.lost.is_set():
            raise RunStopped


class _Keeper:
    """The process's renewing thread and the leases it holds."""

    def __init__(self) -> None:
        self._held: set[LeaseKeeper] = set()
        self._changed = threading.Condition()
        threading.Thread(target=self._loop, daemon=True, name="lease-keeper").start()

    def hold(self, lease: LeaseKeeper) -> None:
        with self._changed:
            self._held.add(lease)
            self._changed.notify()

    def release(self, lease: LeaseKeeper) -> None:
        with self._changed:
            self._held.discard(lease)

    def _due(self) -> list[LeaseKeeper]:
        """Wait until a held lease is due; those that are."""
        with self._changed:
            while True:
                now = time.monotonic()
                due = [lease for lease in self._held if lease.due <= now]
                if due:
                    return due
                soonest = min((lease.due for lease in self._held), default=now + 60)
                self._changed.wait(timeout=soonest - now)

    def _loop(self) -> None:
        while True:
            due = self._due()
            try:
                for lease in due:
                    lease.due = time.monotonic() + lease.interval
                    with self._changed:
                        if lease not in self._held:
                            continue  # its run ended meanwhile
                    try:
                        run_heartbeat(run=lease.run)
                    except RunStopped:
                        lease.lost.set()
                        self.release(lease)
                    except Exception:  # a database hiccup: the next round tries again
                        logger.warning(
                            "renewing run %s's lease failed", lease.run.pk, exc_info=True
                        )
            finally:
                # Renewals are seconds apart: no connection kept open between them (it would
                # hold a test database, or a server's slot, for nothing).
                connection.close()


_KEEPER = PerProcess(_Keeper)


def _keeper() -> _Keeper:
    """This process's keeper (a forked worker starts its own: threads do not survive a fork)."""
    return _KEEPER.get()
