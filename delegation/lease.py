"""Keeps a run's lease alive from a background thread while its worker waits on the model."""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import close_old_connections, connection

from delegation.models import Run
from delegation.services import RunStopped, run_heartbeat


class LeaseKeeper:
    """Renews the lease every third of its length; notices when the run is no longer ours."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"lease-{run.id}")

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def check(self) -> None:
        """Raise RunStopped once the run was cancelled, ended or taken over."""
        if self.lost.is_set():
            raise RunStopped

    def _loop(self) -> None:
        interval = max(0.2, settings.RUN_LEASE_SECONDS / 3)
        try:
            while not self._stop.wait(interval):
                try:
                    run_heartbeat(run=self.run)
                except RunStopped:
                    self.lost.set()
                    return
                close_old_connections()
        finally:
            connection.close()  # this thread's own connection
