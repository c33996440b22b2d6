"""Emits one run's events with its agent tag and a per-run sequence number."""

from __future__ import annotations

import uuid
from typing import Any

from chat.events import emit, envelope
from delegation.models import Run


def agent_tag(run: Run) -> dict[str, Any]:
    """The `{kind, name, display_name, depth, path}` tag of the agent doing this run."""
    config = run.agent_config
    return {
        "kind": "entry" if run.parent_id is None else "sub",
        "name": config["name"],
        "display_name": config["display_name"],
        "depth": run.depth,
        "path": list(run.path),
    }


class RunEmitter:
    """Numbers and tags every event a run sends; `seq` continues across task deliveries."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.tag = agent_tag(run)
        self.seq = run.last_seq

    def emit(self, type: str, message_id: uuid.UUID | None = None, **data: Any) -> None:
        """Emit one event of this run (after commit)."""
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
