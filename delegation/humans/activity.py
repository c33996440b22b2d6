"""The activity log: one row per notable event (delegations, verdicts, escalations, errors)."""

from __future__ import annotations

from typing import Any

from config.db.prepared import PreparedInsert
from delegation.humans.models import Activity
from delegation.models import Run

# A row per delegation, verdict and escalation: compiled once per connection.
_ADD = PreparedInsert(Activity)


def activity_record(
    *,
    kind: str,
    summary: str,
    run: Run | None = None,
    agent_name: str = "",
    actor: Any = None,
    data: dict[str, Any] | None = None,
) -> Activity:
    """Add one row; the agent, turn and user come from `run` when given."""
    return _ADD.insert(
        Activity(
            kind=kind,
            summary=summary[:500],
            run=run,
            root_id=run.root_id_or_self if run is not None else None,
            agent_name=agent_name or (run.agent_config.get("name", "") if run is not None else ""),
            user_id=run.user_id if run is not None else None,
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            data=data or {},
        )
    )
