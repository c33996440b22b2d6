"""Keeps the leases of the runs a process works on alive while its workers wait on the model.

A worker holds its run's lease in a `LeaseKeeper` block; the process's keeper thread
(delegation.runs.keeper) renews every held lease every third of its length, so starting a run
costs no thread of its own. A renewal that finds the run no longer ours (cancelled, ended or
taken over) marks the lease lost, and the worker stops at its next `check()`.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings

from delegation.models import Run
from delegation.runs.keeper import keeper
from delegation.runs.writes import RunStopped, run_heartbeat

logger = logging.getLogger(__name__)


class LeaseKeeper:
    """One run's lease, renewed while the `with` block lasts; notices when the run is no longer
    ours (cancelled, ended or taken over)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.lost = threading.Event()
        self.interval = max(0.2, settings.RUN_LEASE_SECONDS / 3)
        self.due = 0.0  # the keeper renews it from then on (time.monotonic())

    def __enter__(self) -> LeaseKeeper:
        self.due = time.monotonic() + self.interval
        keeper().hold(self)
        return self

    def __exit__(self, *exc: object) -> None:
        keeper().release(self)

    def check(self) -> None:
        """Raise RunStopped once the run was cancelled, ended or taken over."""
        if self.lost.is_set():
            raise RunStopped

    def renew(self) -> bool:
        """Renew the lease now (on the keeper thread); False once the run is no longer ours."""
        try:
            run_heartbeat(run=self.run)
        except RunStopped:
            self.lost.set()
            return False
        except Exception:  # a database hiccup: the next round tries again
            logger.warning("renewing run %s's lease failed", self.run.pk, exc_info=True)
        return True
