"""Writes to agent definitions: versioned revisions and restoring them."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F

from agents.models import AGENT_EDITABLE_FIELDS, Agent, AgentRevision

SNAPSHOT_FIELDS = [
    f for f in AGENT_EDITABLE_FIELDS if f not in ("allowed_subagents", "access_group")
]  # those two are stored by name, below


def agent_snapshot(*, agent: Agent) -> dict[str, Any]:
    """The agent's editable definition as plain JSON (sub-agents and group by name)."""
    data = {field: getattr(agent, field) for field in SNAPSHOT_FIELDS}
    data["allowed_subagents"] = sorted(agent.allowed_subagents.values_list("name", flat=True))
    data["access_group"] = agent.access_group.name if agent.access_group_id else None
    return data


@transaction.atomic
def agent_revision_record(*, agent: Agent, user: Any = None, comment: str = "") -> AgentRevision:
    """Bump the agent's version and store what it is now; call after it and its M2M are saved."""
    Agent.objects.filter(pk=agent.pk).update(version=F("version") + 1)
    agent.refresh_from_db(fields=["version"])
    return AgentRevision.objects.create(
        agent=agent,
        version=agent.version,
        snapshot=agent_snapshot(agent=agent),
        comment=comment[:500],
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic
def agent_revision_restore(*, revision: AgentRevision, user: Any = None) -> AgentRevision:
    """Make the agent as it was in `revision`, recorded as a new revision."""
    from django.contrib.auth.models import Group

    agent = Agent.objects.select_for_update().get(pk=revision.agent_id)
    snapshot = revision.snapshot
    for field in SNAPSHOT_FIELDS:
        if field in snapshot and field != "name":
            setattr(agent, field, snapshot[field])
    group_name = snapshot.get("access_group")
    agent.access_group = Group.objects.filter(name=group_name).first() if group_name else None
    if agent.is_entry:
        Agent.objects.filter(is_entry=True).exclude(pk=agent.pk).update(is_entry=False)
    agent.save()
    agent.allowed_subagents.set(
        Agent.objects.filter(name__in=snapshot.get("allowed_subagents", [])).exclude(pk=agent.pk)
    )
    return agent_revision_record(
        agent=agent, user=user, comment=f"Restored from version {revision.version}."
    )


def agent_set_entry(*, agent: Agent) -> None:
    """Make `agent` the one entry agent (clears the flag elsewhere first)."""
    Agent.objects.filter(is_entry=True).exclude(pk=agent.pk).update(is_entry=False)
