"""The run loop: claim a run, call its model (streaming), run its tools and delegations."""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderError, TextDelta, ToolCallRequest, Usage
from agents.registry import Tool, ToolContext, ToolResult, execute, tools_for
from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.budget import budget_charge_model_call, budget_state
from delegation.delegate_tool import DELEGATE, delegate_tool_schema
from delegation.emitter import RunEmitter
from delegation.guards import delegation_targets
from delegation.lease import LeaseKeeper
from delegation.models import Run, RunStatus
from delegation.outcome import run_end
from delegation.services import (
    RunStopped,
    run_claim,
    run_release,
    run_save_progress,
    run_wait_or_continue,
    usage_add,
)
from delegation.streaming import MessageStream
from delegation.tree import delegation_begin, delegation_result

logger = logging.getLogger(__name__)

WAITING = object()  # a step that started delegations still running


@dataclass(frozen=True)
class AdvanceOutcome:
    """What one delivery of advance_run did: `retry_in` > 0 asks the task to try again later."""

    status: str
    retry_in: float = 0.0
    continue_later: bool = False


def message_id_for(run: Run, kind: str, step: int, index: int = 0) -> uuid.UUID:
    """Deterministic message ids, so a re-run of a step upserts instead of duplicating."""
    return uuid.uuid5(run.id, f"{kind}:{step}:{index}")


def run_advance(*, run_id: Any) -> AdvanceOutcome:
    """Advance a run until it answers, fails, waits for experts, or should continue later."""
    run, retry_in = run_claim(run_id=run_id)
    if run is None:
        return AdvanceOutcome("busy" if retry_in else "noop", retry_in=retry_in)
    emitter = RunEmitter(run)
    try:
        with LeaseKeeper(run) as lease:
            return _advance(run, emitter, lease)
    except RunStopped:
        ChatMessage.objects.filter(run=run, status=MessageStatus.STREAMING).update(
            status=MessageStatus.CANCELLED
        )
        return AdvanceOutcome("stopped")
    except ProviderError as exc:
        return _end(run, emitter, RunStatus.FAILED, error=_error(exc.code, exc.message))
    except Exception:
        logger.exception("run %s failed", run.id)
        return _end(
            run,
            emitter,
            RunStatus.FAILED,
            error=_error("internal_error", "Something went wrong on our side."),
        )


def _advance(run: Run, emitter: RunEmitter, lease: LeaseKeeper) -> AdvanceOutcome:
    task_started = time.monotonic()
    while True:
        lease.check()
        if timezone.now() > run.deadline:
            return _end(
                run,
                emitter,
                RunStatus.TIMED_OUT,
                error=_error("run_timeout", "The run went past its time limit."),
            )
        result = _step(run, emitter, lease)
        if result is WAITING:
            return AdvanceOutcome(RunStatus.WAITING)
        if isinstance(result, str):
            return _end(run, emitter, RunStatus.SUCCEEDED, answer=result)
        if _should_hand_over(task_started):
            run_release(run=run)
            return AdvanceOutcome(RunStatus.QUEUED, continue_later=True)


def _should_hand_over(task_started: float) -> bool:
    """Stop taking steps when one more model call could overrun the task's soft time limit."""
    elapsed = time.monotonic() - task_started
    return elapsed + settings.MODEL_CALL_WORST_SECONDS > settings.CELERY_TASK_SOFT_TIME_LIMIT


def _step(run: Run, emitter: RunEmitter, lease: LeaseKeeper) -> object:
    """One step: finish pending tool calls, or make one model call. The answer text, WAITING,
    or None to go on."""
    tools = _effective_tools(run)
    pending = _pending_tool_calls(run.transcript)
    if pending:
        return _run_tools(run, emitter, pending, tools)
    config = run.agent_config
    # A run's first call fits the budget it was created with; later ones check what is left.
    spent = run.steps > 0 and budget_state(root_id=run.root_id_or_self).spent
    final_step = run.steps + 1 >= config["max_steps"] or spent  # then no tools: answer
    schemas = [t.openai_schema() for t in tools.values()]
    targets = [] if final_step else _targets(run)
    if targets:
        schemas.append(delegate_tool_schema(targets))
    request = ModelRequest(
        model=config["model"] or settings.OPENAI_MODEL,
        messages=_model_messages(run),
        tools=[] if final_step else schemas,
        temperature=config["temperature"],
        max_tokens=config["max_tokens"],
        base_url=config["base_url"],
        api_key_env=config.get("api_key_env", ""),
    )
    provider = provider_for(config["provider"])
    label = "offline" if provider.name == "offline" else request.model
    stream = MessageStream(emitter, message_id_for(run, "text", run.steps), label)
    calls: list[ToolCallRequest] = []
    usage = Usage()
    try:
        for event in provider.stream(request):
            lease.check()
            if isinstance(event, TextDelta):
                stream.add(event.text)
            elif isinstance(event, ToolCallRequest):
                calls.append(event)
            elif isinstance(event, Usage):
                usage = event
    except RunStopped:
        if Run.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
            stream.abandon()  # stopped by the user: keep the words they saw (not on takeover)
        raise
    run.usage = usage_add(run.usage, usage.prompt_tokens, usage.completion_tokens)
    budget_charge_model_call(root_id=run.root_id_or_self, tokens=usage.total_tokens)
    run.steps += 1
    if not calls and not stream.text.strip():
        stream.add("(The model returned an empty answer.)")
    if stream.started:
        stream.complete(
            usage={
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
            }
        )
    assistant: dict[str, Any] = {"role": "assistant", "content": stream.text or None}
    if calls:
        assistant["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    run.transcript = [*run.transcript, assistant]
    _save(run, emitter)
    if calls:
        return _run_tools(run, emitter, _pending_tool_calls(run.transcript), tools, fresh=True)
    return stream.text


def _targets(run: Run) -> list[Any]:
    """Who the run may delegate to, looked up once per delivery."""
    if not hasattr(run, "_delegation_targets"):
        run._delegation_targets = delegation_targets(caller=run)
    return run._delegation_targets


def _model_messages(run: Run) -> list[dict[str, Any]]:
    prompt = run.agent_config["system_prompt"]
    system = [{"role": "system", "content": prompt}] if prompt else []
    return [*system, *run.transcript]


def _effective_tools(run: Run) -> dict[str, Tool]:
    return {t.key: t for t in tools_for(run.agent_config["tool_keys"], run.user)}


def _pending_tool_calls(transcript: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Tool calls of the last assistant message that have no result yet, with their index."""
    for position in range(len(transcript) - 1, -1, -1):
        message = transcript[position]
        if message["role"] == "assistant":
            answered = {m.get("tool_call_id") for m in transcript[position + 1 :]}
            calls = message.get("tool_calls") or []
            return [(i, c) for i, c in enumerate(calls) if c["id"] not in answered]
    return []


def _run_tools(
    run: Run,
    emitter: RunEmitter,
    pending: list[tuple[int, dict[str, Any]]],
    tools: dict[str, Tool],
    fresh: bool = False,
) -> object:
    """Execute each pending call, saving after each so a crash never runs one twice. Delegate
    calls start children (or collect their results when they have ended). WAITING if any child
    is still working."""
    step = run.steps - 1
    waiting = False
    for index, call in pending:
        message_id = message_id_for(run, "tool", step, index)
        if call["function"]["name"] == DELEGATE:
            content = _delegation(run, emitter, call, message_id, fresh)
            if content is None:
                waiting = True
                continue
        else:
            content = _tool(run, emitter, call, message_id, tools)
        run.transcript = [
            *run.transcript,
            {"role": "tool", "tool_call_id": call["id"], "content": content},
        ]
        _save(run, emitter)
    run.last_seq = emitter.seq
    if waiting and run_wait_or_continue(run=run):
        return WAITING
    return None


def _delegation(
    run: Run, emitter: RunEmitter, call: dict[str, Any], message_id: uuid.UUID, fresh: bool
) -> str | None:
    """The result of a delegate call whose child has ended, or None while one is working.
    A call the model just made (`fresh`) has no child yet; a resumed one may."""
    child = None if fresh else run.children.filter(parent_tool_call_id=call["id"]).first()
    if child is None:
        return delegation_begin(caller=run, emitter=emitter, call=call, message_id=message_id)
    return delegation_result(child=child) if child.is_final else None


def _tool(
    run: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    tools: dict[str, Tool],
) -> str:
    """Run one ordinary tool call and report it; the result content for the model."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    shown_arguments = _parse_for_display(raw)
    emitter.emit(
        "tool.called", message_id, call_id=call["id"], name=name, arguments=shown_arguments
    )
    registered = tools.get(name)
    if registered is None:
        result = ToolResult(
            False,
            error_code="unknown_tool",
            error=(
                f"There is no tool named {name!r} available to you. "
                f"Available: {', '.join(sorted(tools)) or 'none'}."
            ),
        )
    else:
        context = ToolContext(user=run.user, session=run.session, run=run, agent=run.agent)
        result = execute(registered, context, raw)
    outcome = (
        {"ok": result.ok, "result": result.data}
        if result.ok
        else {"ok": False, "error": {"code": result.error_code, "message": result.error}}
    )
    message_upsert(
        message_id=message_id,
        session_id=run.session_id,
        role=MessageRole.TOOL,
        run=run,
        agent=emitter.tag,
        status=MessageStatus.COMPLETED,
        tool={"call_id": call["id"], "name": name, "arguments": shown_arguments, **outcome},
    )
    emitter.emit(
        "tool.result",
        message_id,
        call_id=call["id"],
        name=name,
        arguments=shown_arguments,
        **outcome,
    )
    return result.as_content()


def _parse_for_display(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw


def _save(run: Run, emitter: RunEmitter) -> None:
    run.last_seq = emitter.seq
    run_save_progress(run=run)


def _error(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def _end(
    run: Run,
    emitter: RunEmitter,
    status: str,
    *,
    answer: str = "",
    error: dict[str, str] | None = None,
) -> AdvanceOutcome:
    if not run_end(run=run, status=status, answer=answer, error=error, emitter=emitter):
        return AdvanceOutcome("stopped")
    return AdvanceOutcome(status)
