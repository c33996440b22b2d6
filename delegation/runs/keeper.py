"""The process's one keeper thread: renews the leases held and writes the checkpoints offered.

A worker holds a lease on each run it works on (`delegation.runs.lease.LeaseKeeper`) and its streams
offer their text so far (`delegation.runs.checkpoints`); neither waits on the database itself. One
daemon thread per process, "run-keeper", does both, each on its own schedule: a lease when a
third of its length has passed since its last renewal, an offer when its checkpoint is due
(every `checkpoints.INTERVAL` per stream). The thread sleeps until the soonest of them is due
and is woken only when something new is due sooner. It writes due checkpoints first, one short
transaction each, after renewing due leases, and keeps its database connection only while offers
are waiting: renewals alone are seconds apart. What renewing and writing mean belongs to the
lease and the checkpoint (`renew`, `write_offered`); this module only schedules them.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from typing import Protocol

from django.db import connection

from config.db.per_process import PerProcess

THREAD_NAME = "run-keeper"  # listed in config.db.per_process.PROCESS_THREADS
IDLE_WAIT = 60.0  # seconds the thread sleeps with nothing held or offered (woken sooner)


class Renewable(Protocol):
    """A lease the keeper renews every `interval` seconds from `due` on."""

    due: float
    interval: float

    def renew(self) -> bool:
        """Renew it now; False once its run is no longer ours (the keeper drops it then)."""
        ...


class Writable(Protocol):
    """A streaming message's checkpoint that the keeper writes offered text of once `due`."""

    message_id: uuid.UUID
    due: float

    def write_offered(self, text: str, seq: int) -> None:
        """Write the text offered (and set the next `due`); never raises."""
        ...


class Keeper:
    """The process's keeper thread, the leases it holds and the offers waiting for it."""

    def __init__(self) -> None:
        self._leases: set[Renewable] = set()
        self._offers: dict[uuid.UUID, tuple[Writable, str, int]] = {}
        self._changed = threading.Condition()  # guards both; notified when something is sooner
        self._waking_at = math.inf  # when the sleeping thread wakes (inf: it is not asleep)
        self._writing = threading.Lock()  # held while offers taken are being written
        threading.Thread(target=self._loop, daemon=True, name=THREAD_NAME).start()

    def hold(self, lease: Renewable) -> None:
        """Renew `lease` from its `due` on, until released."""
        with self._changed:
            self._leases.add(lease)
            self._wake_by(lease.due)

    def release(self, lease: Renewable) -> None:
        """Renew `lease` no more (a renewal already under way may still land)."""
        with self._changed:
            self._leases.discard(lease)

    def offer(self, checkpoint: Writable, text: str, seq: int) -> None:
        """Have `text` (and the event number `seq`) saved once its checkpoint is due; replaces
        an offer of the same message not yet written."""
        with self._changed:
            self._offers[checkpoint.message_id] = (checkpoint, text, seq)
            self._wake_by(checkpoint.due)

    def withdraw(self, checkpoint: Writable) -> None:
        """Forget an offer not yet written (the stream saves its end itself)."""
        with self._changed:
            if self._offers.get(checkpoint.message_id, (None,))[0] is checkpoint:
                del self._offers[checkpoint.message_id]

    def withdraw_settled(self, checkpoint: Writable) -> None:
        """`withdraw`, then wait for a write of it already under way, so that no older text
        lands after the caller's own save."""
        self.withdraw(checkpoint)
        with self._writing:
            pass

    def flush(self) -> None:
        """Write every offer made before this call, due or not, on the calling thread (a
        test's round); leases keep their schedule."""
        self._write_due_by(math.inf)

    def _wake_by(self, due: float) -> None:
        """Wake the thread if it sleeps past `due` (called holding `_changed`)."""
        if due < self._waking_at:
            self._changed.notify()

    def _wait_until_due(self) -> None:
        """Sleep until a held lease or a waiting offer is due."""
        with self._changed:
            while True:
                now = time.monotonic()
                soonest = min(
                    [lease.due for lease in self._leases]
                    + [offer[0].due for offer in self._offers.values()],
                    default=now + IDLE_WAIT,
                )
                if soonest <= now:
                    self._waking_at = math.inf
                    return
                self._waking_at = soonest
                self._changed.wait(timeout=soonest - now)

    def _write_due_by(self, moment: float) -> None:
        """Write the offers due by `moment`, each in its own transaction."""
        with self._writing:
            with self._changed:
                taken = [offer for offer in self._offers.values() if offer[0].due <= moment]
                for offer in taken:
                    del self._offers[offer[0].message_id]
            for checkpoint, text, seq in taken:
                checkpoint.write_offered(text, seq)

    def _renew_due_by(self, moment: float) -> None:
        """Renew the leases due by `moment`; drop those whose run is no longer ours."""
        with self._changed:
            due = [lease for lease in self._leases if lease.due <= moment]
        for lease in due:
            lease.due = time.monotonic() + lease.interval
            with self._changed:
                if lease not in self._leases:
                    continue  # its run ended meanwhile
            if not lease.renew():
                self.release(lease)

    def _loop(self) -> None:
        while True:
            self._wait_until_due()
            now = time.monotonic()
            try:
                self._renew_due_by(now)  # (first: a slow checkpoint never costs a lease)
                self._write_due_by(now)
            finally:
                with self._changed:
                    idle = not self._offers
                if idle:  # no connection held between renewals (a test database, a slot)
                    connection.close()


_KEEPER = PerProcess(Keeper)


def keeper() -> Keeper:
    """This process's keeper (a forked worker starts its own: threads do not survive a fork)."""
    return _KEEPER.get()
