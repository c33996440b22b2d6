"""Saves streaming messages' text so far, with their runs' leases, from one thread per process.

A stream thread used to write its own checkpoint every 0.3 s (the fenced heartbeat and its
text), waiting for SQLite's single writer behind every other stream while its model's chunks
piled up: with 100 streams that wait was most of a token's lag. Now a stream only hands its
text over (`Checkpoints.offer`, no database) and this thread writes what was offered, one short
transaction per stream, each locking the message before the run as the step's own end does
(no lock cycle with it on Postgres). A run found no longer ours marks its stream lost; the
stream raises RunStopped at its next piece of text, as its own heartbeat used to.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from chat.services import message_text_save
from config.per_process import PerProcess
from delegation.models import Run
from delegation.services import RunStopped, run_heartbeat

logger = logging.getLogger(__name__)

INTERVAL = 0.3  # seconds between two writes of one stream's text (and lease)


@dataclass(eq=False)
class Checkpoint:
    """One streaming message's run and id, whether a write found the run no longer ours, and
    the message's fields until a write created its row (`new`: a stream's start saves nothing,
    so a short answer is written once, at its end)."""

    run: Run
    message_id: uuid.UUID
    lost: threading.Event = field(default_factory=threading.Event)
    new: dict[str, Any] | None = None
    due: float = 0.0  # the thread writes it from then on (time.monotonic())


class Checkpoints:
    """The process's writing thread and the checkpoints waiting for it."""

    def __init__(self) -> None:
        self._waiting: dict[uuid.UUID, tuple[Checkpoint, str, int]] = {}
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # held while offers taken are being written
        self._offered = threading.Event()
        threading.Thread(target=self._loop, daemon=True, name="stream-checkpoints").start()

    def offer(self, checkpoint: Checkpoint, text: str, seq: int) -> None:
        """Have `text` (and the event number `seq`) saved once its checkpoint is due; replaces
        an offer of the same message not yet written."""
        with self._lock:
            self._waiting[checkpoint.message_id] = (checkpoint, text, seq)
        self._offered.set()

    def withdraw(self, checkpoint: Checkpoint, *, settled: bool = False) -> None:
        """Forget an offer not yet written (the stream saves its end itself); `settled` also
        waits for a write of it already under way, so that no older text lands after the
        caller's own save."""
        with self._lock:
            if self._waiting.get(checkpoint.message_id, (None,))[0] is checkpoint:
                del self._waiting[checkpoint.message_id]
        if settled:
            with self._writing:
                pass

    def flush(self) -> None:
        """Write every offer made before this call, due or not (a test's round)."""
        self._write_due_by(math.inf)

    def _write_due_by(self, moment: float) -> float | None:
        """Write the offers due by `moment`; when the next one waiting is due (None: none)."""
        with self._writing:
            with self._lock:
                taken = [offer for offer in self._waiting.values() if offer[0].due <= moment]
                for offer in taken:
                    del self._waiting[offer[0].message_id]
                later = min((offer[0].due for offer in self._waiting.values()), default=None)
                if later is None:
                    self._offered.clear()
            for offer in taken:
                _write(*offer)
        return later

    def _loop(self) -> None:
        while True:
            self._offered.wait()
            later = self._write_due_by(time.monotonic())
            if later is None:
                if not self._offered.is_set():
                    connection.close()  # idle: hold no connection (a test database, a slot)
                continue
            time.sleep(min(INTERVAL, max(0.0, later - time.monotonic())))


def checkpoint_write(checkpoint: Checkpoint, text: str, seq: int) -> None:
    """Save a stream's text so far (the first save creates its row), then renew its run's lease
    and record `seq`, in one transaction (the message before the run, as the step's own end
    locks them); a run no longer ours keeps neither and raises RunStopped."""
    with transaction.atomic():
        message_text_save(message_id=checkpoint.message_id, content=text, new=checkpoint.new)
        run_heartbeat(run=checkpoint.run, seq=seq)
    checkpoint.new = None


def _write(checkpoint: Checkpoint, text: str, seq: int) -> None:
    """`checkpoint_write` on the thread: a run lost marks its stream, an error is logged."""
    if checkpoint.lost.is_set():
        return
    checkpoint.due = time.monotonic() + INTERVAL
    try:
        checkpoint_write(checkpoint, text, seq)
    except RunStopped:
        checkpoint.lost.set()
    except Exception:  # a database hiccup: the stream's next offer tries again
        logger.warning("saving message %s failed", checkpoint.message_id, exc_info=True)


_CHECKPOINTS = PerProcess(Checkpoints)


def checkpoints() -> Checkpoints:
    """This process's checkpoint writer (a forked worker starts its own)."""
    return _CHECKPOINTS.get()
