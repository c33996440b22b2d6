"""Asking an expert: check and take a delegate call, start the expert's run, or refuse it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from agents.models import Agent
from chat.events import emit, envelope
from chat.models import MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.models import Run
from delegation.runs.claim import HandOver
from delegation.runs.create import run_start_child
from delegation.runs.emitter import RunEmitter, agent_tag
from delegation.runs.hooks import HOOKS
from delegation.runs.transcript import DELEGATE, arguments_shown
from delegation.tree.budget import budget_lock_turn, budget_take_delegation
from delegation.tree.delegate_tool import child_prompt, delegate_arguments
from delegation.tree.guards import DelegationRefused, delegation_check
from delegation.tree.labels import asking, refused, spoken


def delegation_begin(
    *,
    caller: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    hand_over: HandOver | None,
) -> str | None:
    """Start the child for one delegate call (handed over to `hand_over`'s task body when it
    may run it next); None when it runs (the caller waits), else the refusal as the tool
    result content for the caller's model."""
    raw = call["function"]["arguments"]
    try:
        arguments = delegate_arguments(raw)
        target, calls_left = _checked_and_taken(caller, arguments["target"])
    except ValueError as exc:
        return _refuse(caller, emitter, call, message_id, raw, "invalid_arguments", str(exc))
    except DelegationRefused as exc:
        return _refuse(caller, emitter, call, message_id, raw, exc.code, exc.message)
    prompt = child_prompt(arguments["task"], arguments["context"])
    reason = arguments["reason"].strip() or (
        f"Chosen by {caller.agent_config['display_name']} without a stated reason; "
        f"{target.display_name} is for: {target.description or ', '.join(target.tags) or '—'}"
    )
    shown = target.name_in(caller.language)  # as the caller's user reads it
    # Within the caller's step when it only asks experts: one commit (no savepoint of its own).
    with transaction.atomic(savepoint=False):
        child = run_start_child(
            caller=caller,
            target=target,
            call_id=call["id"],
            prompt=prompt,
            reason=reason,
            max_steps=calls_left,
            hand_over=hand_over,
        )
        info = {
            "run_id": str(child.id),
            "target": target.name,
            "display_name": shown,
            "task": arguments["task"],
            "status": "running",
        }
        with spoken(caller):
            summary = asking(shown)
        _save_message(
            caller,
            emitter,
            call,
            message_id,
            arguments,
            MessageStatus.STREAMING,
            delegation=info,
            summary=summary,
        )
        emitter.emit("delegation.started", message_id, call_id=call["id"], **info, summary=summary)
        for asked in HOOKS.expert_asked:  # (channels: the line in the turn's chat)
            asked(caller, summary)
        HOOKS.activity(
            kind="delegation_asked",
            run=caller,
            summary=f"{caller.agent_config['display_name']} asked {target.display_name}: "
            f"{arguments['task'][:300]}",
            data={"child_run_id": str(child.id), "target": target.name, "reason": reason},
        )
    return None


def _checked_and_taken(caller: Run, name: str) -> tuple[Agent, int]:
    """The expert `name`, read now, if the guards pass, and the model calls it may make, taken
    from the turn's budget (what the turn has left: the caller's answering call, and each
    one's above it, are taken already); DelegationRefused if not."""
    target = delegation_check(caller=caller, target_name=name)
    calls_left = budget_take_delegation(caller=caller, root=caller.root_or_self)
    if calls_left is None:
        raise DelegationRefused(
            "delegation_budget", _("This turn has no budget left to ask another expert.")
        )
    return target, calls_left


def _refuse(
    caller: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    raw: str,
    code: str,
    message: str,
) -> str:
    arguments = arguments_shown(raw)
    target = arguments.get("target") if isinstance(arguments, dict) else None
    shown = _shown_name(target, caller.language)
    info = {
        "run_id": None,
        "target": target,
        "display_name": shown if shown is not None else target,
        "status": "refused",
        "task": arguments.get("task") if isinstance(arguments, dict) else None,
    }
    error = {"code": code, "message": message}
    with spoken(caller):
        summary = refused(shown)
    HOOKS.activity(
        kind="delegation_refused",
        run=caller,
        summary=f"{caller.agent_config['display_name']} could not ask {target}: {message}",
        data={"target": target, "code": code},
    )
    for refusal in HOOKS.delegation_refused:  # (routing: counted against the expert)
        refusal(caller, target if isinstance(target, str) else None, code)
    _save_message(
        caller,
        emitter,
        call,
        message_id,
        arguments,
        MessageStatus.COMPLETED,
        delegation=info,
        ok=False,
        error=error,
        summary=summary,
    )
    emitter.emit("delegation.started", message_id, call_id=call["id"], **info, summary=summary)
    emitter.emit(
        "delegation.completed",
        message_id,
        call_id=call["id"],
        run_id=None,
        status="refused",
        summary=summary,
        answer="",
        error=error,
    )
    return json.dumps({"ok": False, "error": error}, ensure_ascii=False)


def _shown_name(target: Any, language: str) -> str | None:
    """How people know the expert a refused call named, in `language` (its name there, if it
    exists; else the name the model gave)."""
    if not isinstance(target, str) or not target:
        return None
    known = Agent.objects.filter(name=target).only("name", "display_name", "display_names")
    agent = known.first()
    return agent.name_in(language) if agent is not None else target


def _save_message(
    caller: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    arguments: Any,
    status: str,
    **tool: Any,
) -> None:
    message_upsert(
        message_id=message_id,
        session_id=caller.session_id,
        role=MessageRole.TOOL,
        run_id=caller.id,
        agent=emitter.tag,
        status=status,
        tool={"call_id": call["id"], "name": DELEGATE, "arguments": arguments, **tool},
    )


def delegation_reattempt(
    *, child: Run, target: Agent, task: str, step: str, hand_over: HandOver | None
) -> Run | None:
    """Start a fallback's new attempt (`step`: "retry" or "next_expert") for the delegate call
    `child` answered: `target` (the same expert again, or the next-best one) asked `task`, as
    a new delegation message of the caller; None when the caller ended or the turn's budget
    has no delegation left. Called by the child before it ends, so the caller never sees the
    call without an unfinished attempt."""
    call_id = child.parent_tool_call_id
    with transaction.atomic():
        if child.parent_id != child.root_id:  # (the root first, as a stop locks the tree)
            budget_lock_turn(root_id=child.root_id)
        caller = (
            Run.objects.select_for_update(of=("self",))
            .select_related("root", "user")
            .get(pk=child.parent_id)
        )
        if caller.is_final:
            return None
        # A delegation, and the attempt's first model call (its caller's next was taken
        # with the delegation the attempt replaces).
        calls_left = budget_take_delegation(
            caller=caller, root=caller.root_or_self, callers_next=False
        )
        if calls_left is None:
            return None
        attempts = Run.objects.filter(parent_id=caller.id, parent_tool_call_id=call_id)
        attempt = attempts.count() + 1
        words = "retry" if step == "retry" else "second opinion"
        issue = (child.validation or {}).get("issue", "")
        new = run_start_child(
            caller=caller,
            target=target,
            call_id=call_id,
            prompt=task,
            reason=f"Fallback ({words}): {child.agent_config['display_name']}'s answer was "
            f"judged invalid: {issue}",
            max_steps=calls_left,
            hand_over=hand_over,  # (the expert ending runs here; the caller waits elsewhere)
        )
        message_id = uuid.uuid5(caller.id, f"tool:{call_id}:attempt:{attempt}")
        info = {
            "run_id": str(new.id),
            "target": target.name,
            "display_name": target.name_in(caller.language),
            "task": task,
            "status": "running",
            "attempt": attempt,
            "fallback": step,
            "previous_run_id": str(child.id),
        }
        with spoken(caller):
            summary = asking(target.name_in(caller.language))
        message_upsert(
            message_id=message_id,
            session_id=caller.session_id,
            role=MessageRole.TOOL,
            run_id=caller.id,
            agent=agent_tag(caller),
            status=MessageStatus.STREAMING,
            tool={
                "call_id": call_id,
                "name": DELEGATE,
                "arguments": {"target": target.name, "task": task},
                "delegation": info,
                "summary": summary,
            },
        )
        emit(
            envelope(
                "delegation.started",
                session_id=caller.session_id,
                run_id=caller.id,
                message_id=message_id,
                agent=agent_tag(caller),
                data={"call_id": call_id, **info, "summary": summary},
            )
        )
        for asked in HOOKS.expert_asked:
            asked(caller, summary)
        HOOKS.activity(
            kind="fallback",
            run=child,
            summary=f"{child.agent_config['display_name']}'s answer was judged invalid; "
            f"{words}: asking {target.display_name}",
            data={"step": step, "new_run_id": str(new.id), "issue": issue},
        )
    return new
