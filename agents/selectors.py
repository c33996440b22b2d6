"""Reads of agent definitions: who may use which agent, and the entry agent."""

from __future__ import annotations

import difflib
import json
from typing import Any

from django.db.models import JSONField, OuterRef, QuerySet, Subquery
from django.utils.translation import gettext as _

from agents.knowledge.selectors import with_knowledge_flag
from agents.models import Agent, AgentRevision
from config.db import JSONList
from config.db.prepared import PreparedLookup
from config.errors import AppError


def agent_usable_by(*, agent: Agent, user: Any) -> bool:
    """Whether the end user passes the agent's access rule (group and/or permission)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser:
        return True
    if agent.access_group_id and not user.groups.filter(pk=agent.access_group_id).exists():
        return False
    return not agent.access_permission or user.has_perm(agent.access_permission)


def agents_usable_by(*, user: Any) -> list[Agent]:
    """Enabled agents this user may use."""
    agents = Agent.objects.filter(enabled=True).select_related("access_group")
    return [agent for agent in agents if agent_usable_by(agent=agent, user=user)]


# The entry agent (one at most: a unique constraint) with its knowledge flag and experts' names,
# read at every turn's start: its SQL, with two subqueries, is compiled once per connection.
_ENTRY = PreparedLookup(
    lambda: with_what_runs_pin(Agent.objects.filter(is_entry=True, enabled=True))
)


# An agent by id with what a run pins of it (a session's own agent, read at each of its turns):
# compiled once per connection.
_PINNABLE = PreparedLookup(
    lambda pk: with_what_runs_pin(Agent.objects.select_related("access_group")).filter(pk=pk),
    keys=[Agent._meta.pk],
)


def agent_to_pin(*, agent_id: Any) -> Agent | None:
    """The agent with its knowledge flag and experts' names, read in one statement (pinning it
    for a run asks nothing more), or None."""
    return _PINNABLE.row(agent_id)


def agent_entry_for(*, user: Any) -> Agent:
    """The entry agent, if enabled and usable by this user; else an AppError saying why."""
    agent = _ENTRY.row()
    if agent is None:
        message = _("No entry agent is configured. An admin must mark one in admin.")
        raise AppError("no_entry_agent", message)
    if not agent_usable_by(agent=agent, user=user):
        message = _("You may not use %(agent)s.") % {"agent": agent.display_name}
        raise AppError("agent_forbidden", message, status=403)
    return agent


def with_subagent_names(agents: QuerySet[Any]) -> QuerySet[Any]:
    """Agents loaded with the names of the experts each may delegate to (`subagent_names`,
    None for none), in the same statement: `agent_snapshot` then asks no more."""
    links = Agent.allowed_subagents.through.objects.filter(from_agent=OuterRef("pk"))
    names = links.values("from_agent").annotate(names=JSONList("to_agent__name")).values("names")
    return agents.annotate(subagent_names=Subquery(names, output_field=JSONField()))


def with_what_runs_pin(agents: QuerySet[Any]) -> QuerySet[Any]:
    """Agents loaded with what a run pins of them beyond their own row (whether knowledge is
    linked, the experts' names) in the same statement: pinning one asks nothing more."""
    return with_subagent_names(with_knowledge_flag(agents))


def agent_revisions(*, agent: Agent) -> QuerySet[AgentRevision]:
    """The agent's revisions, newest first."""
    return agent.revisions.select_related("created_by")


def revision_diff(*, revision: AgentRevision, against: AgentRevision | None) -> str:
    """A unified diff of two revisions' snapshots (against None: everything is added)."""

    def lines(snapshot: dict[str, Any] | None) -> list[str]:
        if snapshot is None:
            return []
        return json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return "\n".join(
        difflib.unified_diff(
            lines(against.snapshot if against else None),
            lines(revision.snapshot),
            fromfile=f"v{against.version}" if against else "(none)",
            tofile=f"v{revision.version}",
            lineterm="",
        )
    )
