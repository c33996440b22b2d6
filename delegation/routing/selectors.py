"""Reads of routing: the policy of an entry agent, a session's memory, a run's mode, the
statistics (per entry agent, expert and intent; per day for a chart)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from agents.models import Agent
from config.db.prepared import PreparedLookup
from delegation.models import Run
from delegation.routing.models import RoutingPolicy, RoutingStat, SessionMemory
from delegation.routing.stats import COUNTERS
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


def _rate(part: int, whole: int) -> float | None:
    """A share in percent, one decimal (None: nothing to share)."""
    return round(100 * part / whole, 1) if whole else None


def stats_rows(
    *, entry: str = "", expert: str = "", intent: str = "", days: int | None = None
) -> list[dict[str, Any]]:
    """Routing statistics summed per entry agent, expert and intent over the last `days` days
    (default: the window), with their rates; the most delegations first."""
    days = days or settings.ROUTING_STATS_WINDOW_DAYS
    rows = RoutingStat.objects.filter(day__gte=timezone.now().date() - timedelta(days=days))
    for name, value in (("entry", entry), ("expert", expert), ("intent", intent)):
        if value:
            rows = rows.filter(**{name: value})
    summed = rows.values("entry", "expert", "intent").annotate(
        **{name: Sum(name) for name in COUNTERS}
    )
    result = []
    for row in summed.order_by("-delegations", "entry", "expert", "intent"):
        judged = row["validation_passed"] + row["validation_failed"]
        rated = row["rated_up"] + row["rated_down"]
        good = row["validation_passed"] + row["rated_up"]
        result.append(
            row
            | {
                "success_rate": _rate(row["succeeded"], row["delegations"]),
                "validation_rate": _rate(row["validation_passed"], judged),
                "rating_rate": _rate(row["rated_up"], rated),
                "good_rate": _rate(good, judged + rated),
            }
        )
    return result


def stats_daily(
    *, entry: str = "", intent: str = "", days: int | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each expert's delegations and their good and bad judgements per day over the last `days`
    days, for its chart (one query); days without delegations are left out."""
    days = days or settings.ROUTING_STATS_WINDOW_DAYS
    rows = RoutingStat.objects.filter(day__gte=timezone.now().date() - timedelta(days=days))
    if entry:
        rows = rows.filter(entry=entry)
    if intent:
        rows = rows.filter(intent=intent)
    summed = rows.values("expert", "day").annotate(
        delegations=Sum("delegations"),
        good=Sum("validation_passed") + Sum("rated_up"),
        bad=Sum("validation_failed") + Sum("rated_down"),
    )
    daily: dict[str, list[dict[str, Any]]] = {}
    for row in summed.order_by("expert", "day"):
        daily.setdefault(row["expert"], []).append(row)
    return daily


def stats_filters() -> dict[str, list[str]]:
    """The entry agents, experts and intents that have statistics (the filters' choices)."""
    rows = RoutingStat.objects.all()
    return {
        name: sorted(set(rows.values_list(name, flat=True).distinct()))
        for name in ("entry", "expert", "intent")
    }
