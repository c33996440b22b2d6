"""The delegation tree: start a child for a delegate call, finish it into its parent, stop trees."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from chat.events import emit, envelope
from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from config.enqueue import enqueue
from delegation.budget import budget_state, budget_take_delegation
from delegation.delegate_tool import DELEGATE, child_prompt, delegate_arguments
from delegation.emitter import RunEmitter, agent_tag
from delegation.guards import DelegationRefused, delegation_check
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.services import run_create_child

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
    if not budget_take_delegation(root_id=caller.root_id_or_self):
        return _refuse(
            caller,
            emitter,
            call,
            message_id,
            raw,
            "delegation_budget",
            "This turn has already asked as many experts as it may.",
        )
    with transaction.atomic():
        calls_left = budget_state(root_id=caller.root_id_or_self).model_calls_left
        child = run_create_child(
            caller=caller,
            target=target,
            call_id=call["id"],
            prompt=prompt,
            reason=arguments["reason"],
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
        from delegation.tasks import advance_run  # tasks import the runner, which imports us

        enqueue(advance_run, str(child.id))
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
        run=caller,
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
    from delegation.tasks import advance_run

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
            enqueue(advance_run, str(parent.id))


def subtree_ids(*, run: Run) -> list[uuid.UUID]:
    """The run and every run below it."""
    ids, frontier = [run.id], [run.id]
    while frontier:
        frontier = list(Run.objects.filter(parent_id__in=frontier).values_list("id", flat=True))
        ids.extend(frontier)
    return ids


def run_stop(*, run: Run) -> bool:
    """Cancel a run and everything below it; a stopped expert's caller goes on without it."""
    with transaction.atomic():
        ids = subtree_ids(run=run)
        active = list(
            Run.objects.select_for_update().filter(pk__in=ids).exclude(status__in=FINAL_STATUSES)
        )
        if not active:
            return False
        Run.objects.filter(pk__in=[r.id for r in active]).update(
            status=RunStatus.CANCELLED,
            finished_at=timezone.now(),
            lease_expires_at=None,
            lease_token=None,
        )
        ChatMessage.objects.filter(run_id__in=ids, status=MessageStatus.STREAMING).update(
            status=MessageStatus.CANCELLED
        )
        for stopped in active:
            stopped.status = RunStatus.CANCELLED
            emit(
                envelope(
                    "run.completed",
                    session_id=stopped.session_id,
                    run_id=stopped.id,
                    agent=agent_tag(stopped),
                    data={"status": RunStatus.CANCELLED, "usage": stopped.usage, "error": None},
                )
            )
        top = next((r for r in active if r.id == run.id), None)
        if top is not None and top.parent_id:
            delegation_complete(child=top)
    return True
