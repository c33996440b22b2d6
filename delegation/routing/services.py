"""Routing a turn: decide on its root run's first delivery, record the decision, start the
chosen expert, tell staff who asked for debug; remember the turn afterwards."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

from django.db import transaction

from config.permissions import holds_model_permission
from delegation.models import Run
from delegation.routing.decide import ASK_HUMAN, RoutingInput, routing_decide
from delegation.routing.memory import memory_after_turn
from delegation.routing.models import Learning, RoutingPolicy
from delegation.routing.rules import person_question
from delegation.routing.selectors import mode_of, run_policy
from delegation.routing.stats import fallback_counted
from delegation.runs.emitter import RunEmitter
from delegation.runs.transcript import DELEGATE
from delegation.runs.writes import run_save_progress
from delegation.tree.guards import delegation_targets


def route_turn(*, run: Run, emitter: RunEmitter) -> None:
    """Decide the turn's routing once, before the entry agent's first step. A decision naming
    an expert starts with that delegation (the entry agent then answers from its result); one
    for a person starts by asking staff (the inbox), the entry agent answering from theirs."""
    request = run.routing_request or {}
    decision = routing_decide(
        RoutingInput(
            text=run.task,
            policy=_with_learning(run_policy(run), request.get("learning")),
            entry=run.agent_config,
            targets=delegation_targets(caller=run),
            force_strict=bool(request.get("force_strict")),
            force_guide=bool(request.get("force_guide")),
            run=run,
            user=run.user,
        )
    )
    run.routing = decision.as_dict()
    if decision.ask_human:
        words = (decision.matched_keywords or [""])[0]
        question = person_question(run.task, words)[:2000]
        arguments = {"question": question, "urgency": "normal"}
        run.transcript = [*run.transcript, _first_call(run, ASK_HUMAN, arguments)]
    elif decision.target:
        arguments = {"target": decision.target, "task": run.task, "reason": decision.reason[:500]}
        run.transcript = [*run.transcript, _first_call(run, DELEGATE, arguments)]
    run.last_seq = emitter.seq
    with transaction.atomic():  # (a fallback is counted with the decision's save: once)
        run_save_progress(run=run)
        if decision.fallback_used:
            fallback_counted(run=run, target=decision.target)
    if request.get("debug") and holds_model_permission(run.user, Run, "view"):
        emitter.emit("routing.decided", **run.routing)


def _with_learning(policy: RoutingPolicy | None, learning: Any) -> RoutingPolicy | None:
    """The policy with the turn's own learning setting (an eval run compares off and on), as
    a copy: the policy read for the turn stays as it is."""
    if policy is None or learning not in Learning.values or learning == policy.learning:
        return policy
    changed = copy.copy(policy)
    changed.learning = learning
    return changed


def route_after_turn(*, run: Run) -> None:
    """After the entry agent answered: update the session's routing memory."""
    memory_after_turn(run=run, policy=run_policy(run))


def _first_call(run: Run, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The assistant message that asks the routed expert (or staff), as if the entry agent
    had."""
    call_id = f"route_{uuid.uuid5(run.id, 'route').hex[:16]}"
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": json.dumps(arguments, ensure_ascii=False),
                },
            }
        ],
    }


def route_after_turn_hook(run: Run) -> None:
    """The engine's `turn_succeeded` hook: the turn's session memory (`route_after_turn`)."""
    route_after_turn(run=run)


def turn_mode_data(run: Run) -> dict[str, str | None]:
    """The engine's `completed_data` hook: the turn's mode on its `run.completed` event."""
    return {"mode": mode_of(run)}
