"""Guards checked in code before a child run exists; each refusal is a reason the caller can use."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agents.models import Agent
from agents.selectors import agent_usable_by, with_what_runs_pin
from config.prepared import PreparedLookup
from delegation.models import Run
from delegation.per_run import per_run, per_run_keep


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
# The same, and in the same statement the experts those experts may ask (a level below).
_CANDIDATES_AND_BELOW = PreparedLookup(
    lambda names: _askable(
        Q(name__in=names)
        | Exists(
            Agent.allowed_subagents.through.objects.filter(
                to_agent=OuterRef("pk"), from_agent__name__in=names
            )
        )
    ),
    keys=[Agent._meta.get_field("name")],
)


@dataclass(frozen=True)
class _Offer:
    """What a run's delivery read of the experts it may be offered: its own (enabled,
    delegatable, not on its path), and, when they may ask experts of their own, every agent
    they may ask (`below`, enabled and delegatable, in the read's order; None: not read)."""

    experts: list[Agent]
    below: list[Agent] | None = None
    step: int | None = None  # the run's step whose model request read it


def _offer(caller: Run) -> _Offer:
    """The caller's offer, as its first delivery here read it (delegation.per_run), or as its
    caller's read handed it down (`delegation_offer_hand_down`)."""
    return per_run(caller, "candidates", lambda: _read_offer(caller))


def _read_offer(caller: Run) -> _Offer:
    names = _names(caller)
    if not names:
        return _Offer([])
    if caller.depth + 2 > _depth_bound(caller):  # its experts may not ask further
        return _Offer(_CANDIDATES.rows(names))
    rows = _CANDIDATES_AND_BELOW.rows(names)
    return _Offer([a for a in rows if a.name in names], rows, caller.steps)


def _names(run: Run) -> list[str]:
    """The experts a run may ask, but for those on its own path."""
    return [n for n in run.agent_config.get("allowed_subagents", []) if n not in run.path]


def _candidates(caller: Run) -> list[Agent]:
    """The caller's allowed experts that are enabled, delegatable and not on its path, as its
    first delivery here read them (delegation.per_run: a delegation to one is confirmed
    against the agent as it is when asked, `delegation_check`)."""
    return _offer(caller).experts


def delegation_offer_hand_down(*, caller: Run, child: Run, target: Agent) -> None:
    """Keep for `child` the experts it may be offered, from its caller's read when that read
    them in the same statement as the caller's own (`_Offer.below`) and `target`, the agent
    the child pins, is the one that read gave, with the experts the child is pinned to ask (an
    eval's draft may pin others), and the read is the asking step's own (a read kept from an
    earlier delivery is not handed down: it may be minutes old): the child's first delivery in
    this process then reads none (as a later delivery keeps its first's read,
    delegation.per_run)."""
    offer = _offer(caller)
    if offer.below is None or offer.step != caller.steps - 1:  # (its step is counted: asked)
        return
    if not any(target is a for a in offer.experts):
        return
    names = set(_names(child))
    if not names <= set(target.subagent_names or ()):
        return
    per_run_keep(child, "candidates", _Offer([a for a in offer.below if a.name in names]))


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
        out.append(f"{agent.name} ({agent.display_name}{tags}): needs {' and '.join(needs)}")
    return out


# An expert by name, with its access group, knowledge flag and experts' names: compiled once
# per connection.
_TARGET = PreparedLookup(
    lambda name: with_what_runs_pin(Agent.objects.select_related("access_group")).filter(name=name),
    keys=[Agent._meta.get_field("name")],
)


def delegation_check(*, caller: Run, target_name: str, as_offered: bool = False) -> Agent:
    """The target agent if every guard passes; else DelegationRefused saying which and why.

    The agent is read now, so that access or availability an admin changed since the model was
    offered the expert is enforced; `as_offered`: as the delivery's offer of experts read it
    when that holds it (no statement), which the caller must confirm unchanged in the
    statement that takes the delegation (`delegation.budget.budget_take_delegation`'s
    `unchanged`), and check again with `as_offered=False` if it changed."""
    allowed = caller.agent_config.get("allowed_subagents", [])
    offered = (
        next((a for a in _candidates(caller) if a.name == target_name), None)
        if as_offered
        else None
    )
    target = offered or _TARGET.row(target_name)
    if target is None:
        raise DelegationRefused(
            "delegation_unknown_target",
            _("There is no agent named %(name)s. You may ask: %(allowed)s.")
            % {"name": repr(target_name), "allowed": ", ".join(allowed) or _("none")},
        )
    if target.name not in allowed:
        raise DelegationRefused(
            "delegation_not_allowed",
            _("%(caller)s may not delegate to %(target)s.")
            % {"caller": caller.agent_config["display_name"], "target": target.display_name},
        )
    if not (target.enabled and target.delegatable):
        raise DelegationRefused(
            "delegation_unavailable",
            _("%(target)s is not available right now.") % {"target": target.display_name},
        )
    if target.name in caller.path:
        chain = " → ".join([*caller.path, target.name])
        raise DelegationRefused(
            "delegation_cycle",
            _("%(target)s is already working on this request (%(chain)s would loop).")
            % {"target": target.display_name, "chain": chain},
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
            % {"target": target.display_name},
        )
    return target
