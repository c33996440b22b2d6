"""Emits one run's events with its agent tag and a per-run sequence number."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings

from agents.names import text_in
from chat.events import emit, envelope
from delegation.models import Run
from delegation.runs.ended import EndWatch

# A run whose events are sent by a process other than its last worker (a stop, the sweeper, a
# takeover) continues its sequence this far past the last saved number: the worker may have
# sent events since its last save, and `seq` must never repeat within a run.
SEQ_GAP = 1000


def agent_tag(run: Run) -> dict[str, Any]:
    """The `{kind, name, display_name, depth, path}` tag of the agent doing this run, its
    display name in the run's language (as pinned: runs begun before names per language have
    none, and show the plain display name)."""
    config = run.agent_config
    language = run.language or settings.LANGUAGE_CODE
    return {
        "kind": "entry" if run.parent_id is None else "sub",
        "name": config["name"],
        "display_name": text_in(config.get("display_names"), config["display_name"], language),
        "depth": len(run.path) - 1,
        "path": list(run.path),
    }


class RunEmitter:
    """Numbers and tags every event a run sends; `seq` continues across task deliveries.

    Once the run has ended elsewhere, a worker's late events are dropped: nothing of a run is
    emitted after its `run.completed`, except by the one who ends it (`closing`) and the final
    state of a message its worker saved after the end (`emit_kept`).
    """

    def __init__(self, run: Run, *, foreign: bool = False, since: float | None = None) -> None:
        self.run = run
        self.tag = agent_tag(run)
        self.foreign = foreign
        self.seq = run.last_seq + (SEQ_GAP if foreign else 0)
        self.closing = False
        self.end = EndWatch(run.id, since=since)  # `since`: when the run was read not ended
        # Agent messages this emitter started and has not completed. The run's own worker
        # (not foreign) started every message of the run that can still be open.
        self.streaming: set[uuid.UUID] = set()

    def emit(self, type: str, message_id: uuid.UUID | None = None, **data: Any) -> bool:
        """Emit one event of this run (after commit); False if the run already ended."""
        if not self.closing and self.end.ended():
            return False
        self._send(type, message_id, data)
        return True

    def emit_kept(self, message_id: uuid.UUID, **data: Any) -> None:
        """Send a message's final state after the run ended: its worker saved words the end
        could not see (they had not reached the database yet), and a page that resynced at the
        end must get them as a reload would. The one event sent past a run's end by another."""
        self._send("message.completed", message_id, data)

    def _send(self, type: str, message_id: uuid.UUID | None, data: dict[str, Any]) -> None:
        self.seq += 1
        emit(
            envelope(
                type,
                session_id=self.run.session_id,
                run_id=self.run.id,
                message_id=message_id,
                agent=self.tag,
                seq=self.seq,
                data=data,
            )
        )
