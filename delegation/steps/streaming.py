"""Turns a provider's text deltas into coalesced message events and a persisted agent message."""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.models import FINAL_STATUSES, Run
from delegation.runs.checkpoints import INTERVAL, Checkpoint, checkpoint_write, checkpoints
from delegation.runs.emitter import RunEmitter
from delegation.runs.writes import RunStopped
from delegation.selectors import orphan_status

PERSIST_INTERVAL = INTERVAL  # seconds between saves of partial text (and cancellation checks)


class MessageStream:
    """One agent message as it streams: started on first text, deltas batched, saved by the
    keeper thread while it streams (from its first interval) and by itself at its end."""

    def __init__(self, emitter: RunEmitter, message_id: uuid.UUID, model_label: str) -> None:
        self.emitter = emitter
        self.message_id = message_id
        self.model_label = model_label
        self.text = ""
        self._sent = 0  # characters already emitted as deltas
        self._saved_at = 0.0
        self._flushed_at = 0.0
        self._started = False
        self._started_at: datetime | None = None
        self._checkpoint = Checkpoint(run=emitter.run, message_id=message_id)

    def add(self, piece: str) -> None:
        """Take a piece of text; emit and persist in batches. Raises RunStopped once a
        checkpoint found the run no longer ours."""
        if self._checkpoint.lost.is_set():
            raise RunStopped
        if not self._started:
            self._start()
        self.text += piece
        now = time.monotonic()
        if now - self._flushed_at >= settings.EVENT_COALESCE_MS / 1000:
            self._flush(now)
        self._save_so_far(now)

    def complete(
        self,
        *,
        usage: dict[str, int],
        status: str = MessageStatus.COMPLETED,
        citations: list[dict[str, Any]] | None = None,
    ) -> None:
        """Send what is left, save the whole text and emit `message.completed`. Unfenced: call
        it inside a transaction with the run's fenced write (`run_save_progress`), which undoes
        this save (and its events) when the run is no longer ours."""
        if not self._started:
            self._start()
        checkpoints().withdraw(self._checkpoint)
        self._flush(time.monotonic())
        message_upsert(**self._fields_whole(status, citations, usage))
        self.emitter.streaming.discard(self.message_id)
        self.emitter.emit(
            "message.completed",
            self.message_id,
            text=self.text,
            status=status,
            usage=usage,
            model=self.model_label,
            citations=citations or [],
        )

    def persist(self) -> None:
        """Save the text so far, still streaming (the run's end closes the message)."""
        if self._started:
            checkpoints().withdraw_settled(self._checkpoint)
            self._save(MessageStatus.STREAMING)
            self.emitter.streaming.add(self.message_id)  # reopened if its end was undone

    def keep_text(self) -> None:
        """After the run ended elsewhere (stopped, timed out, taken over): keep the words
        already shown (sent as deltas, not those still waiting in the coalescing window) in
        the saved message, its status as the end left it; a change is announced
        (`message.completed`), so a page that resynced at the end holds what a reload shows."""
        if not self._started:
            return
        checkpoints().withdraw_settled(self._checkpoint)
        shown = self.text[: self._sent]
        rows = ChatMessage.objects.filter(pk=self.message_id)
        saved = rows.values_list("content", "status").first()
        if saved is None or saved[1] == MessageStatus.STREAMING:
            self._close_orphan(rows, shown, saved=saved is not None)
            return
        content, status = saved
        further = len(content) < len(shown) and shown.startswith(content)
        if further and rows.exclude(status=MessageStatus.STREAMING).update(content=shown):
            self._announce_kept(shown, status)

    def _close_orphan(self, rows: Any, shown: str, *, saved: bool) -> None:
        """The run's end did not close the message: it was not saved yet (its first checkpoint
        had not come), or saved after the end (the end came between the run's last fenced write
        and this message's first save, so its events were dropped). With nothing shown it goes;
        else it is saved closed, as the end would have. A run taken over keeps it as it is:
        its new worker redoes the step."""
        status = Run.objects.filter(pk=self.emitter.run.pk).values_list("status", flat=True)
        ended = status.first()
        if ended not in FINAL_STATUSES:
            return
        closed = orphan_status(ended)
        if not saved:
            if shown:
                self._save(closed, text=shown)
                self._announce_kept(shown, closed)
            return
        if not shown:
            rows.filter(status=MessageStatus.STREAMING).delete()
            return
        if rows.filter(status=MessageStatus.STREAMING).update(content=shown, status=closed):
            self._announce_kept(shown, closed)

    def _announce_kept(self, text: str, status: str) -> None:
        """The message's state as saved after its run's end, for pages that resynced at it."""
        self.emitter.streaming.discard(self.message_id)
        self.emitter.emit_kept(
            self.message_id, text=text, status=status, usage={}, model=self.model_label
        )

    def _save_so_far(self, now: float) -> None:
        """Mid-stream: hand the text so far to the process's keeper thread
        (delegation.runs.checkpoints), which saves it with the run's lease renewed and the number of
        events sent once its checkpoint is due (every PERSIST_INTERVAL, the first that long
        after the start, so a stalled stream is saved too): this thread never waits on the
        database mid-answer. Inside a transaction (nothing outside it can see its rows: tests)
        the stream writes its checkpoint itself when due."""
        if not connection.in_atomic_block:
            checkpoints().offer(self._checkpoint, self.text, self.emitter.seq)
        elif now - self._saved_at >= PERSIST_INTERVAL:
            checkpoint_write(self._checkpoint, self.text, self.emitter.seq)
            self._saved_at = now

    @property
    def started(self) -> bool:
        """Whether any text arrived (a tool-only step has no message)."""
        return self._started

    def _start(self) -> None:
        # Nothing is saved yet: the first checkpoint creates the row, PERSIST_INTERVAL from now
        # even if the stream stalls (a stream never waits for the database at its start), or
        # the message's end does, for an answer shorter than that (one write in all). Dated
        # from now either way, so history keeps the order the page showed. A run ended
        # meanwhile drops this message's events, and its next fenced write (RunStopped) has
        # keep_text save or close what was shown.
        self._started = True
        self._started_at = timezone.now()
        now = time.monotonic()
        self._checkpoint.due = now + PERSIST_INTERVAL
        self._checkpoint.new = self._fields()
        self.emitter.streaming.add(self.message_id)
        # The first delta goes out at once (time to first token); only what follows coalesces.
        self._saved_at, self._flushed_at = now, float("-inf")
        self.emitter.emit("message.started", self.message_id, model=self.model_label)

    def _flush(self, now: float) -> None:
        if len(self.text) > self._sent:
            sent = self.emitter.emit(
                "message.delta", self.message_id, text=self.text[self._sent :], offset=self._sent
            )
            if sent:  # a delta dropped because the run ended was never shown
                self._sent = len(self.text)
        self._flushed_at = now

    def _fields(self) -> dict[str, Any]:
        """The message's row but for its text and status: whose it is and when it started."""
        run = self.emitter.run
        return {
            "session_id": run.session_id,
            "run_id": run.id,
            "agent": self.emitter.tag,
            "model": self.model_label,
            "created_at": self._started_at,
        }

    def _save(self, status: str, *, text: str | None = None) -> None:
        message_upsert(**self._fields_whole(status, text=text))

    def _fields_whole(
        self,
        status: str,
        citations: list[dict[str, Any]] | None = None,
        usage: dict[str, Any] | None = None,
        *,
        text: str | None = None,
    ) -> dict[str, Any]:
        """The message's whole row as `message_upsert` takes it."""
        return dict(
            message_id=self.message_id,
            role=MessageRole.AGENT,
            content=self.text if text is None else text,
            status=status,
            citations=citations,
            usage=usage,
            **self._fields(),
        )
