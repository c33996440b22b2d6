"""Reads of routing: the policy of an entry agent, a session's memory, a run's mode."""

from __future__ import annotations

from typing import Any

from delegation.models import Run
from delegation.routing.models import RoutingPolicy, SessionMemory


def policy_for(*, agent_name: str) -> RoutingPolicy | None:
    """The routing policy of this entry agent, if any."""
    return RoutingPolicy.objects.filter(entry_agents__name=agent_name).first()


def mode_of(run: Run) -> str | None:
    """The mode of the run's turn (decided on its root by a policy or a force flag), or None
    when nothing routed it."""
    root = run if run.root_id is None else run.root
    routing = root.routing or {}
    forced = routing.get("matched_rule", "") or ""
    if routing.get("policy") or forced.startswith(("force_strict", "force_guide")):
        return routing.get("mode")
    return None


def memory_of(*, session: Any, user: Any, per_user: bool = False) -> SessionMemory | None:
    """The routing memory of the session (or of the user, when the policy keeps it per user)."""
    if per_user:
        return SessionMemory.objects.filter(user=user, session__isnull=True).first()
    return SessionMemory.objects.filter(session=session, user=user).first()
