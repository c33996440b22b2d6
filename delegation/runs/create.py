"""Creating runs: a turn's root run, and an expert's run for a delegation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents.knowledge.tools import knowledge_tool_keys_for
from agents.models import Agent
from agents.services import agent_snapshot
from config.db.prepared import PreparedInsert
from delegation.models import Run
from delegation.runs.claim import HandOver, _ready
from delegation.runs.hooks import child_config


def pinned_config(agent: Agent) -> dict[str, Any]:
    """The agent's definition as the run will use it: linked knowledge adds the kb tools."""
    config = agent_snapshot(agent=agent)
    extra = [k for k in knowledge_tool_keys_for(agent) if k not in config["tool_keys"]]
    config["tool_keys"] = [*config["tool_keys"], *extra]
    return config


# Every turn's run and every expert's: compiled once per connection.
_NEW_RUN = PreparedInsert(Run)


def budget_initial() -> dict[str, int]:
    """The limits a new turn gets (from settings, so an operator can tune them)."""
    return {
        "max_delegations": settings.TURN_MAX_DELEGATIONS,
        "max_model_calls": settings.TURN_MAX_MODEL_CALLS,
        "max_tokens": settings.TURN_MAX_TOKENS,
        "max_tool_calls": settings.TURN_MAX_TOOL_CALLS,
    }


def run_create(
    *,
    agent: Agent,
    user: Any,
    session: Any,
    task: str,
    transcript: list[dict[str, Any]],
    user_message: Any = None,
    routing_request: dict[str, bool] | None = None,
    language: str = "",
    a2a_hops: int = 0,
) -> Run:
    """A queued root run with the agent's definition pinned as it is now, and a fresh budget;
    `routing_request` holds the turn's routing flags (force_strict, force_guide, debug),
    `language` the one its messages are in, and `a2a_hops` how many agent platforms its
    message came through (kept in the budget: A2A_MAX_HOPS bounds them)."""
    now = timezone.now()
    budget = budget_initial()
    if a2a_hops:
        budget["a2a_hops"] = a2a_hops
    return _NEW_RUN.insert(
        Run(
            session=session,
            user=user,
            agent=agent,
            agent_version=agent.version,
            agent_config=pinned_config(agent),
            user_message=user_message,
            routing_request=routing_request or {},
            depth=0,
            path=[agent.name],
            task=task,
            language=language,
            transcript=transcript,
            budget=budget,
            # Its first model call, taken from the turn's budget now (no statement later).
            tree_model_calls=1,
            reserved_call=0,
            deadline=now + timedelta(seconds=settings.RUN_DEADLINE_SECONDS),
            queued_at=now,
        )
    )


def run_start_child(
    *,
    caller: Run,
    target: Agent,
    call_id: str,
    prompt: str,
    reason: str,
    max_steps: int,
    hand_over: HandOver | None,
) -> Run:
    """A child run of `caller` for its delegate call `call_id`: the target's definition (as
    the engine's hooks pin it), at most `max_steps` calls, within the root's deadline; its
    first model call was taken from the turn's budget with its delegation
    (`budget_take_delegation`). Made ready: handed over claimed (`hand_over`), or queued."""
    child = _child(caller, target, call_id, prompt, reason, max_steps)
    child.reserved_call = 0
    _ready(child, hand_over)
    return _NEW_RUN.insert(child)


def _child(
    caller: Run, target: Agent, call_id: str, prompt: str, reason: str, max_steps: int
) -> Run:
    now = timezone.now()
    root = caller.root_or_self
    config = pinned_config(target)
    config["max_steps"] = max(1, min(config["max_steps"], max_steps))
    child = Run(
        session_id=caller.session_id,
        user=caller.user,  # loaded with the caller: later checks of the user cost no query
        agent=target,
        agent_version=target.version,
        agent_config=config,
        parent=caller,
        parent_tool_call_id=call_id,
        root=root,  # (the caller's, as loaded: a handed-over expert's steps read it)
        depth=caller.depth + 1,
        path=[*caller.path, target.name],
        task=prompt,
        language=caller.language,  # the user's language, whatever words the caller delegated in
        routing_reason=reason[:500],
        transcript=[{"role": "user", "content": prompt}],
        queued_at=now,
        deadline=min(root.deadline, now + timedelta(seconds=settings.CHILD_DEADLINE_SECONDS)),
    )
    if Run.session.is_cached(caller):
        child.session = caller.session
    child.agent_config = child_config(child, calls_granted=max_steps)
    return child
