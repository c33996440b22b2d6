"""Guards checked in code before a child run exists; each refusal is a reason the caller can use."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agents.models import Agent
from agents.selectors import agent_usable_by, with_what_runs_pin
from config.db.prepared import PreparedLookup
from delegation.models import Run
from delegation.runs.per_run import per_run
from delegation.tree.labels import expert_name


class DelegationRefused(Exception):
    """A delegation the guards refuse: a documented code and a sentence for model and user."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def depth_limit(*, caller: Run) -> int:
    """The deepest a child of this caller may be: min(caller's limit, root's limit, global)."""
    return min(caller.agent_config["max_depth"], _depth_bound(caller))


def _askable(which: Q) -> QuerySet[Agent]:
    """Enabled, delegatable agents (`which` of them), with their access groups and what a run
    pins of them (a delegation to one pins it from this read)."""
    agents = Agent.objects.filter(which, enabled=True, delegatable=True)
    return with_what_runs_pin(agents).select_related("access_group")


# Experts by name: compiled once per connection and number of names (a leaf, with none, asks
# nothing).
_CANDIDATES = PreparedLookup(
    lambda names: _askable(Q(name__in=names)), keys=[Agent._meta.get_field("name")]
)


def _names(run: Run) -> list[str]:
    """The experts a run may ask, but for those on its own path."""
    return [n for n in run.agent_config.get("allowed_subagents", []) if n not in run.path]


def _candidates(caller: Run) -> list[Agent]:
    """The caller's allowed experts that are enabled, delegatable and not on its path, as its
    first delivery in this process read them (delegation.runs.per_run). This is what the model is
    offered; what is asked is checked against the agent as it is then (`delegation_check`)."""

    def read() -> list[Agent]:
        names = _names(caller)
        return _CANDIDATES.rows(names) if names else []

    return per_run(caller, "candidates", read)


def _depth_bound(caller: Run) -> int:
    """The deepest any run below this caller may delegate to (its own limit aside)."""
    root_limit = (caller.root.agent_config if caller.root_id else caller.agent_config)["max_depth"]
    return min(root_limit, settings.DELEGATION_MAX_DEPTH)


def delegation_targets(*, caller: Run) -> list[Agent]:
    """The agents this caller may delegate to right now (what the delegate tool offers)."""
    if caller.depth + 1 > depth_limit(caller=caller):
        return []
    return [a for a in _candidates(caller) if agent_usable_by(agent=a, user=caller.user)]


def experts_out_of_reach(*, caller: Run) -> list[str]:
    """The caller's experts the END USER may not use, each as "name (Display): needs …", so
    the model can tell the user that access, not absence, is why (never silently hidden)."""
    if not caller.agent_config.get("allowed_subagents"):
        return []
    out = []
    for agent in _candidates(caller):
        if agent_usable_by(agent=agent, user=caller.user):
            continue
        needs = []
        if agent.access_group_id:
            needs.append(f"the '{agent.access_group.name}' group")
        if agent.access_permission:
            needs.append(f"the '{agent.access_permission}' permission")
        tags = f"; tags: {', '.join(agent.tags)}" if agent.tags else ""
        shown = agent.name_in(caller.language)
        out.append(f"{agent.name} ({shown}{tags}): needs {' and '.join(needs)}")
    return out


# An expert by name, with its access group, knowledge flag and experts' names: compiled once
# per connection.
_TARGET = PreparedLookup(
    lambda name: with_what_runs_pin(Agent.objects.select_related("access_group")).filter(name=name),
    keys=[Agent._meta.get_field("name")],
)


def delegation_check(*, caller: Run, target_name: str) -> Agent:
    """The target agent if every guard passes; else DelegationRefused saying which and why.

    The agent is read now, so that access or availability an admin changed since the model was
    offered the expert is enforced."""
    allowed = caller.agent_config.get("allowed_subagents", [])
    target = _TARGET.row(target_name)
    if target is None:
        raise DelegationRefused(
            "delegation_unknown_target",
            _("There is no agent named %(name)s. You may ask: %(allowed)s.")
            % {"name": repr(target_name), "allowed": ", ".join(allowed) or _("none")},
        )
    shown = target.name_in(caller.language)  # refusals are read by the caller's user too
    if target.name not in allowed:
        raise DelegationRefused(
            "delegation_not_allowed",
            _("%(caller)s may not delegate to %(target)s.")
            % {"caller": expert_name(caller.agent_config, caller.language), "target": shown},
        )
    if not (target.enabled and target.delegatable):
        raise DelegationRefused(
            "delegation_unavailable",
            _("%(target)s is not available right now.") % {"target": shown},
        )
    if target.name in caller.path:
        chain = " → ".join([*caller.path, target.name])
        raise DelegationRefused(
            "delegation_cycle",
            _("%(target)s is already working on this request (%(chain)s would loop).")
            % {"target": shown, "chain": chain},
        )
    limit = depth_limit(caller=caller)
    if caller.depth + 1 > limit:
        raise DelegationRefused(
            "delegation_depth",
            ngettext(
                "Delegation may go %(limit)s level deep; this would be deeper.",
                "Delegation may go %(limit)s levels deep; this would be deeper.",
                limit,
            )
            % {"limit": limit},
        )
    if not agent_usable_by(agent=target, user=caller.user):
        raise DelegationRefused(
            "delegation_forbidden",
            _("This user may not use %(target)s, so it cannot be asked on their behalf.")
            % {"target": shown},
        )
    return target
