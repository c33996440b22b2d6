"""The fallback chain for an answer judged invalid: which step comes next for one delegate
call (retry, the next-best expert, low confidence, or an honest "could not answer")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.models import DEFAULT_FALLBACK_CHAIN, Agent
from delegation.models import Run
from delegation.routing.models import RuleKind
from delegation.routing.rules import fold, rule_match
from delegation.routing.selectors import policy_for
from delegation.tree.budget import budget_state
from delegation.tree.guards import delegation_targets

RESTARTS = ("retry", "next_expert")  # steps that ask again (a new attempt for the same call)
TERMINAL = ("low_confidence", "unanswered")


@dataclass(frozen=True)
class Plan:
    """The next step: an attempt to start (`target`, `task`), or a terminal marking."""

    step: str
    target: Agent | None = None
    task: str = ""


def attempts_of(*, caller_id: Any, call_id: str) -> list[Run]:
    """Every expert run asked for one delegate call, first attempt first."""
    return list(
        Run.objects.filter(parent_id=caller_id, parent_tool_call_id=call_id).order_by("created_at")
    )


def fallback_plan(*, child: Run, issue: str) -> Plan:
    """The first step of the first attempt's chain not used yet that can be taken now; when
    the chain runs out, low confidence (an invalid answer is never passed on unmarked)."""
    attempts = attempts_of(caller_id=child.parent_id, call_id=child.parent_tool_call_id)
    first = attempts[0] if attempts else child
    chain = first.agent_config.get("fallback_chain", DEFAULT_FALLBACK_CHAIN)
    used = {(a.validation or {}).get("outcome") for a in attempts}
    caller = Run.objects.select_related("root", "user").get(pk=child.parent_id)
    for step in chain:
        if step in used:
            continue
        if step in TERMINAL:
            return Plan(step)
        if not _room_for_attempt(caller):
            continue
        if step == "retry":
            target = next(
                (a for a in delegation_targets(caller=caller) if a.pk == first.agent_id), None
            )
            if target is not None:
                return Plan("retry", target, retry_task(first.task, issue))
        if step == "next_expert":
            tried = {a.agent_id for a in attempts}
            target = next_best_expert(caller=caller, task=first.task, exclude=tried)
            if target is not None:
                return Plan("next_expert", target, first.task)
    return Plan("low_confidence")


def retry_task(task: str, issue: str) -> str:
    """The task again, with why the last answer was not accepted."""
    return (
        f"{task}\n\nAn earlier answer to this task was checked and not accepted: {issue} "
        "Answer again and fix that."
    )


def _room_for_attempt(caller: Run) -> bool:
    """A new attempt needs a delegation and a model call beyond the callers' own answers."""
    budget = budget_state(root_id=caller.root_id_or_self)
    return budget.delegations_left > 0 and budget.model_calls_left - (caller.depth + 1) >= 1


def next_best_expert(*, caller: Run, task: str, exclude: set[Any]) -> Agent | None:
    """The expert the routing policy would pick next for the task among those the caller may
    ask now: the first intent rule that matches and names one, else the first whose name or
    a tag the task mentions. None when no other expert fits (asking a random one would not
    help)."""
    candidates = [a for a in delegation_targets(caller=caller) if a.pk not in exclude]
    if not candidates:
        return None
    by_name = {a.name: a for a in candidates}
    root_config = (caller.root or caller).agent_config
    policy = policy_for(agent_name=root_config["name"])
    if policy is not None:
        rules = policy.rules.filter(enabled=True, kind=RuleKind.INTENT).select_related("target")
        for rule in rules:
            if rule.target is None or rule.target.name not in by_name:
                continue
            match = rule_match(
                task,
                keywords=rule.keywords,
                pattern=rule.pattern,
                max_chars=rule.max_chars,
                numbers=rule.strict_on_numbers,
            )
            if match.matched:
                return by_name[rule.target.name]
    folded = fold(task)
    for agent in candidates:
        if any(word and fold(word) in folded for word in [agent.name, *agent.tags]):
            return agent
    return None


def suggestion(*, child: Run) -> str:
    """Whom to ask instead, for an honest "could not answer"."""
    group = child.agent_config.get("human_group")
    if group:
        return f"the “{group}” team"
    caller = Run.objects.filter(pk=child.parent_id).first()
    others = [
        a.display_name
        for a in (delegation_targets(caller=caller) if caller else [])
        if a.pk != child.agent_id
    ]
    if others:
        return "another expert (" + ", ".join(others[:3]) + ") or a person responsible for it"
    return "a person responsible for this topic"
