"""The delegation tree: start a child for a delegate call, report a finished child to its caller."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from chat.events import emit, envelope
from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.budget import budget_state, budget_take_delegation
from delegation.delegate_tool import DELEGATE, child_prompt, delegate_arguments
from delegation.emitter import RunEmitter, agent_tag
from delegation.guards import DelegationRefused, delegation_check
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.services import run_create_child, run_enqueue

FAILURE_WORDS = {
    RunStatus.FAILED: ("delegation_failed", "I asked the {name} but it could not finish"),
    RunStatus.TIMED_OUT: (
        "delegation_timed_out",
        "I asked the {name} but it did not answer in time",
    ),
    RunStatus.CANCELLED: ("delegation_cancelled", "The {name} was stopped before it answered"),
}


def delegation_begin(
    *, caller: Run, emitter: RunEmitter, call: dict[str, Any], message_id: uuid.UUID
) -> str | None:
    """Start the child for one delegate call; None when it runs (the caller waits), else the
    refusal as the tool result content for the caller's model."""
    raw = call["function"]["arguments"]
    try:
        arguments = delegate_arguments(raw)
        target = delegation_check(caller=caller, target_name=arguments["target"])
    except ValueError as exc:
        return _refuse(caller, emitter, call, message_id, raw, "invalid_arguments", str(exc))
    except DelegationRefused as exc:
        return _refuse(caller, emitter, call, message_id, raw, exc.code, exc.message)
    prompt = child_prompt(arguments["task"], arguments["context"])
    # The child's calls: what the turn has left, less one for the caller and each caller above
    # it to answer once the child is done.
    calls_left = budget_state(root_id=caller.root_id_or_self).model_calls_left - (caller.depth + 1)
    if calls_left < 1 or not budget_take_delegation(root_id=caller.root_id_or_self):
        return _refuse(
            caller,
            emitter,
            call,
            message_id,
            raw,
            "delegation_budget",
            "This turn has no budget left to ask another expert.",
        )
    reason = arguments["reason"].strip() or (
        f"Chosen by {caller.agent_config['display_name']} without a stated reason; "
        f"{target.display_name} is for: {target.description or ', '.join(target.tags) or '—'}"
    )
    with transaction.atomic():
        child = run_create_child(
            caller=caller,
            target=target,
            call_id=call["id"],
            prompt=prompt,
            reason=reason,
            max_steps=calls_left,
        )
        info = {
            "run_id": str(child.id),
            "target": target.name,
            "display_name": target.display_name,
            "task": arguments["task"],
            "status": "running",
        }
        _save_message(
            caller, emitter, call, message_id, arguments, MessageStatus.STREAMING, delegation=info
        )
        emitter.emit("delegation.started", message_id, call_id=call["id"], **info)
        run_enqueue(run_id=child.id)
    return None


def _refuse(
    caller: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    raw: str,
    code: str,
    message: str,
) -> str:
    arguments = _loads(raw)
    target = arguments.get("target") if isinstance(arguments, dict) else None
    info = {
        "run_id": None,
        "target": target,
        "display_name": target,
        "status": "refused",
        "task": arguments.get("task") if isinstance(arguments, dict) else None,
    }
    error = {"code": code, "message": message}
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
    )
    emitter.emit("delegation.started", message_id, call_id=call["id"], **info)
    emitter.emit(
        "delegation.completed",
        message_id,
        call_id=call["id"],
        run_id=None,
        status="refused",
        summary=message,
        error=error,
    )
    return json.dumps({"ok": False, "error": error}, ensure_ascii=False)


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


def _loads(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw


def delegation_result(*, child: Run) -> str:
    """The tool result content a finished child gives its caller's model."""
    name = child.agent_config["display_name"]
    if child.status == RunStatus.SUCCEEDED:
        body: dict[str, Any] = {"ok": True, "result": {"agent": name, "answer": child.answer}}
    else:
        code, words = FAILURE_WORDS.get(child.status, FAILURE_WORDS[RunStatus.FAILED])
        reason = (child.error or {}).get("message", "")
        body = {
            "ok": False,
            "status": child.status,
            "error": {
                "code": code,
                "message": words.format(name=name) + (f": {reason}" if reason else "."),
            },
        }
    return json.dumps(body, ensure_ascii=False)


def delegation_complete(*, child: Run) -> None:
    """Report a child's end to its caller; the last child to end re-enqueues the caller."""
    with transaction.atomic():
        parent = Run.objects.select_for_update().filter(pk=child.parent_id).first()
        if parent is None:
            return
        result = json.loads(delegation_result(child=child))
        summary = child.answer[:300] if result["ok"] else result["error"]["message"]
        message = ChatMessage.objects.filter(
            run=parent, role=MessageRole.TOOL, tool__call_id=child.parent_tool_call_id
        ).first()
        if message is not None:
            message.tool = {
                **message.tool,
                **result,
                "delegation": {**message.tool.get("delegation", {}), "status": child.status},
            }
            message.status = MessageStatus.COMPLETED
            message.save(update_fields=["tool", "status", "updated_at"])
        emit(
            envelope(
                "delegation.completed",
                session_id=parent.session_id,
                run_id=parent.id,
                message_id=message.id if message else None,
                agent=agent_tag(parent),
                data={
                    "call_id": child.parent_tool_call_id,
                    "run_id": str(child.id),
                    "status": child.status,
                    "summary": summary,
                    "error": None if result["ok"] else result["error"],
                    "usage": child.usage,
                },
            )
        )
        if (
            parent.status == RunStatus.WAITING
            and not parent.children.exclude(status__in=FINAL_STATUSES).exists()
        ):
            Run.objects.filter(pk=parent.pk).update(
                status=RunStatus.QUEUED, queued_at=timezone.now()
            )
            run_enqueue(run_id=parent.id)
