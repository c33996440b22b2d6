"""The activity log: one row per notable event (delegations, verdicts, escalations, errors)."""

from __future__ import annotations

from typing import Any

from agents.knowledge.selectors import knowledge_bases_of_documents
from config.db.prepared import PreparedInsert
from delegation.humans.models import Activity, Audience
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
    group: str | None = None,
    audience: str = Audience.STAFF,
) -> Activity:
    """Add one row; the agent, turn, user, assignment group (unless `group` names another: an
    inbox item's, a review's) and the knowledge it may quote come from `run` when given.
    `audience` user: the row reports a question to the end user, and is theirs alone."""
    config = run.agent_config if run is not None else {}
    row = _ADD.insert(
        Activity(
            kind=kind,
            summary=summary[:500],
            run=run,
            root_id=run.root_id_or_self if run is not None else None,
            agent_name=agent_name or config.get("name", ""),
            user_id=run.user_id if run is not None else None,
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            data=data or {},
            group=config.get("human_group", "") if group is None else group,
            audience=audience,
        )
    )
    kb_ids = _knowledge_shown(run) if run is not None else []
    if kb_ids:
        Activity.knowledge.through.objects.bulk_create(
            [Activity.knowledge.through(activity_id=row.pk, knowledgebase_id=k) for k in kb_ids]
        )
    return row


def _knowledge_shown(run: Run) -> list[int]:
    """The knowledge bases whose passages or documents the run was shown (its experts' cited
    ones included): what its answer, a task it wrote or a question it asked may quote."""
    documents = {r["document_id"] for r in run.references or [] if r.get("document_id")}
    return knowledge_bases_of_documents(document_ids=documents) if documents else []
