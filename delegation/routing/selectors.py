"""Reads of routing: the policy of an entry agent, a session's memory, a run's mode."""

from __future__ import annotations

from typing import Any

from agents.models import Agent
from config.db.prepared import PreparedLookup
from delegation.models import Run
from delegation.routing.models import RoutingPolicy, SessionMemory
from delegation.runs.per_run import per_run

# An entry agent's policy, read at each turn's start and each delivery of its run: compiled
# once per connection (the first by name, as `.first()` orders them).
_POLICY = PreparedLookup(
    lambda name: RoutingPolicy.objects.filter(entry_agents__name=name).order_by("name"),
    keys=[Agent._meta.get_field("name")],
)


def policy_for(*, agent_name: str) -> RoutingPolicy | None:
    """The routing policy of this entry agent, if any."""
    return _POLICY.row(agent_name)


def run_policy(run: Run) -> RoutingPolicy | None:
    """The routing policy of an entry agent's run, looked up once for its deliveries in this
    process (delegation.runs.per_run)."""
    return per_run(run, "policy", lambda: policy_for(agent_name=run.agent_config["name"]))


def mode_of(run: Run) -> str | None:
    """The mode of the run's turn (decided on its root by a policy or a force flag), or None
    when nothing routed it."""
    root = run if run.root_id is None else run.root
    return routing_mode(root.routing)


def routing_mode(routing: dict[str, Any] | None) -> str | None:
    """The mode a stored decision put its turn in (None: no policy or flag routed it)."""
    routing = routing or {}
    forced = routing.get("matched_rule", "") or ""
    if routing.get("policy") or forced.startswith(("force_strict", "force_guide")):
        return routing.get("mode")
    return None


def session_modes(*, session: Any) -> dict[str, str]:
    """{root run id: mode} of the session's routed turns (the page's mode badges)."""
    rows = Run.objects.filter(session=session, parent__isnull=True, routing__isnull=False)
    modes = {
        str(run_id): routing_mode(routing) for run_id, routing in rows.values_list("id", "routing")
    }
    return {run_id: mode for run_id, mode in modes.items() if mode}


# A session's routing memory, and a user's (kept per user by a policy): read at each turn's
# start and end, compiled once per connection.
_SESSION_MEMORY = PreparedLookup(
    lambda session, user: SessionMemory.objects.filter(session_id=session, user_id=user).order_by(
        "pk"
    ),
    keys=[SessionMemory._meta.get_field("session"), SessionMemory._meta.get_field("user")],
)
_USER_MEMORY = PreparedLookup(
    lambda user: SessionMemory.objects.filter(user_id=user, session__isnull=True).order_by("pk"),
    keys=[SessionMemory._meta.get_field("user")],
)


def memory_of(*, session: Any, user: Any, per_user: bool = False) -> SessionMemory | None:
    """The routing memory of the session (or of the user, when the policy keeps it per user);
    each given as a model or its key."""
    user = getattr(user, "pk", user)
    if per_user:
        return _USER_MEMORY.row(user)
    return _SESSION_MEMORY.row(getattr(session, "pk", session), user)
