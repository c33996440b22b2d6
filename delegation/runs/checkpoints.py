"""Saves streaming messages' text so far, with their runs' leases, from the keeper thread.

A stream hands its text over (`checkpoints().offer`, no database) and the process's keeper
thread (delegation.runs.keeper) writes what was offered once the stream's checkpoint is due, every
INTERVAL: one short transaction per stream, locking the message before the run as the step's
own end does (no lock cycle with it on Postgres), so a stream never waits on the database
mid-answer. A run found no longer ours marks its stream lost; the stream raises RunStopped at
its next piece of text. Inside a transaction a stream writes its checkpoint itself
(`checkpoint_write`).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from chat.services import message_text_save
from delegation.models import Run
from delegation.runs.hooks import HOOKS
from delegation.runs.keeper import Keeper, keeper
from delegation.runs.writes import RunStopped, run_heartbeat

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
    due: float = 0.0  # the keeper writes it from then on (time.monotonic())

    def write_offered(self, text: str, seq: int) -> None:
        """`checkpoint_write` on the keeper thread: a run lost marks the stream, an error is
        logged (the stream's next offer tries again)."""
        if self.lost.is_set():
            return
        self.due = time.monotonic() + INTERVAL
        try:
            checkpoint_write(self, text, seq)
        except RunStopped:
            self.lost.set()
        except Exception:  # a database hiccup: the stream's next offer tries again
            logger.warning("saving message %s failed", self.message_id, exc_info=True)


def checkpoint_write(checkpoint: Checkpoint, text: str, seq: int) -> None:
    """Save a stream's text so far (the first save creates its row), then renew its run's lease
    and record `seq`, in one transaction (the message before the run, as the step's own end
    locks them); a run no longer ours keeps neither and raises RunStopped."""
    with transaction.atomic():
        message_text_save(message_id=checkpoint.message_id, content=text, new=checkpoint.new)
        run_heartbeat(run=checkpoint.run, seq=seq)
    checkpoint.new = None
    if checkpoint.run.parent_id is None:
        for growing in HOOKS.answer_growing:  # (channels: the answer so far in Slack's note)
            growing(checkpoint.run, text)


def checkpoints() -> Keeper:
    """This process's keeper, which takes the offers (a forked worker starts its own)."""
    return keeper()
