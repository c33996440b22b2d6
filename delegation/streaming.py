"""Turns a provider's text deltas into coalesced message events and a persisted agent message."""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.conf import settings

from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.emitter import RunEmitter
from delegation.services import run_heartbeat

PERSIST_INTERVAL = 0.3  # seconds between saves of partial text (and cancellation checks)


class MessageStream:
    """One agent message as it streams: started on first text, deltas batched, then completed."""

    def __init__(
        self, emitter: RunEmitter, message_id: uuid.UUID, model_label: str, *, fenced: bool = True
    ) -> None:
        self.emitter = emitter
        self.fenced = fenced  # check the run is still ours before the first write
        self.message_id = message_id
        self.model_label = model_label
        self.text = ""
        self._sent = 0  # characters already emitted as deltas
        self._saved_at = 0.0
        self._flushed_at = 0.0
        self._started = False

    def add(self, piece: str) -> None:
        """Take a piece of text; emit and persist in batches."""
        if not self._started:
            self._start()
        self.text += piece
        now = time.monotonic()
        if now - self._flushed_at >= settings.EVENT_COALESCE_MS / 1000:
            self._flush(now)
        if now - self._saved_at >= PERSIST_INTERVAL:
            # Raises RunStopped once the run ended elsewhere; saves how many events were sent.
            run_heartbeat(run=self.emitter.run, seq=self.emitter.seq)
            self._save(MessageStatus.STREAMING)
            self._saved_at = now

    def complete(
        self,
        *,
        usage: dict[str, int],
        status: str = MessageStatus.COMPLETED,
        citations: list[dict[str, Any]] | None = None,
    ) -> None:
        """Send what is left, save the whole text and emit `message.completed` (RunStopped if
        the run ended meanwhile: then its end already closed the message)."""
        if not self._started:
            self._start()
        if self.fenced:
            run_heartbeat(run=self.emitter.run, seq=self.emitter.seq)
        self._flush(time.monotonic())
        self._save(status, citations, usage)
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
            self._save(MessageStatus.STREAMING)

    def keep_text(self) -> None:
        """After the run ended elsewhere (stopped, timed out, taken over): keep the words
        already shown (sent as deltas, not those still waiting in the coalescing window) in
        the saved message, without changing its status or emitting."""
        if not self._started:
            return
        shown = self.text[: self._sent]
        ended = ChatMessage.objects.filter(pk=self.message_id).exclude(
            status=MessageStatus.STREAMING
        )
        saved = ended.values_list("content", flat=True).first()
        if saved is not None and len(saved) < len(shown) and shown.startswith(saved):
            ended.update(content=shown)

    @property
    def started(self) -> bool:
        """Whether any text arrived (a tool-only step has no message)."""
        return self._started

    def _start(self) -> None:
        if self.fenced:  # an answer after a long wait: the run may have been stopped meanwhile
            run_heartbeat(run=self.emitter.run)
        self._started = True
        self._save(MessageStatus.STREAMING)
        self.emitter.streaming.add(self.message_id)
        self._saved_at = self._flushed_at = time.monotonic()
        self.emitter.emit("message.started", self.message_id, model=self.model_label)

    def _flush(self, now: float) -> None:
        if len(self.text) > self._sent:
            sent = self.emitter.emit(
                "message.delta", self.message_id, text=self.text[self._sent :], offset=self._sent
            )
            if sent:  # a delta dropped because the run ended was never shown
                self._sent = len(self.text)
        self._flushed_at = now

    def _save(
        self,
        status: str,
        citations: list[dict[str, Any]] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        run = self.emitter.run
        message_upsert(
            message_id=self.message_id,
            session_id=run.session_id,
            role=MessageRole.AGENT,
            run_id=run.id,
            agent=self.emitter.tag,
            content=self.text,
            status=status,
            model=self.model_label,
            citations=citations,
            usage=usage,
        )
