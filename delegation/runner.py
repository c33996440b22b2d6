"""The run loop: claim a run, call its model (streaming), run its tools, until it answers."""

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
from delegation.emitter import RunEmitter
from delegation.models import Run, RunStatus
from delegation.services import (
    RunStopped,
    run_claim,
    run_finish,
    run_release,
    run_save_progress,
    usage_add,
)
from delegation.streaming import MessageStream

logger = logging.getLogger(__name__)


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
    """Advance a run until it answers, fails, is cancelled, or should continue in a new task."""
    run, retry_in = run_claim(run_id=run_id)
    if run is None:
        return AdvanceOutcome("busy" if retry_in else "noop", retry_in=retry_in)
    emitter = RunEmitter(run)
    task_started = time.monotonic()
    try:
        while True:
            if timezone.now() > run.deadline:
                return _end(
                    run,
                    emitter,
                    RunStatus.TIMED_OUT,
                    error=_error("run_timeout", "The run went past its time limit."),
                )
            answer = _step(run, emitter)
            if answer is not None:
                return _end(run, emitter, RunStatus.SUCCEEDED, answer=answer)
            if _should_hand_over(task_started):
                run_release(run=run)
                return AdvanceOutcome(RunStatus.QUEUED, continue_later=True)
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


def _should_hand_over(task_started: float) -> bool:
    """Stop taking steps when one more model call could overrun the task's soft time limit."""
    elapsed = time.monotonic() - task_started
    return elapsed + settings.MODEL_CALL_WORST_SECONDS > settings.CELERY_TASK_SOFT_TIME_LIMIT


def _step(run: Run, emitter: RunEmitter) -> str | None:
    """One step: finish pending tool calls, or make one model call. Returns the answer if any."""
    tools = _effective_tools(run)
    pending = _pending_tool_calls(run.transcript)
    if pending:
        _run_tools(run, emitter, pending, tools)
        return None
    config = run.agent_config
    final_step = run.steps + 1 >= config["max_steps"]  # the last call may not use tools
    request = ModelRequest(
        model=config["model"] or settings.OPENAI_MODEL,
        messages=[{"role": "system", "content": config["system_prompt"]}, *run.transcript]
        if config["system_prompt"]
        else list(run.transcript),
        tools=[] if final_step else [t.openai_schema() for t in tools.values()],
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
    for event in provider.stream(request):
        if isinstance(event, TextDelta):
            stream.add(event.text)
        elif isinstance(event, ToolCallRequest):
            calls.append(event)
        elif isinstance(event, Usage):
            usage = event
    run.usage = usage_add(run.usage, usage.prompt_tokens, usage.completion_tokens)
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
        _run_tools(run, emitter, _pending_tool_calls(run.transcript), tools)
        return None
    return stream.text


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
) -> None:
    """Execute each pending call, saving after each so a crash never runs one twice."""
    context = ToolContext(user=run.user, session=run.session, run=run, agent=run.agent)
    step = run.steps - 1
    for index, call in pending:
        name, raw = call["function"]["name"], call["function"]["arguments"]
        message_id = message_id_for(run, "tool", step, index)
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
        run.transcript = [
            *run.transcript,
            {"role": "tool", "tool_call_id": call["id"], "content": result.as_content()},
        ]
        emitter.emit(
            "tool.result",
            message_id,
            call_id=call["id"],
            name=name,
            arguments=shown_arguments,
            **outcome,
        )
        _save(run, emitter)


def _parse_for_display(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw


def _save(run: Run, emitter: RunEmitter) -> None:
    run.last_seq = emitter.seq
    if not run_save_progress(run=run):
        raise RunStopped


def _error(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


FAILURE_SENTENCES = {
    RunStatus.TIMED_OUT: "I could not finish in time",
    RunStatus.FAILED: "I could not finish this",
}


def _end(
    run: Run,
    emitter: RunEmitter,
    status: str,
    *,
    answer: str = "",
    error: dict[str, str] | None = None,
) -> AdvanceOutcome:
    """Record the outcome; on failure tell the user plainly, in the chat and as an `error` event."""
    if not run_finish(run=run, status=status, answer=answer, error=error):
        return AdvanceOutcome("stopped")
    if error:
        emitter.emit("error", code=error["code"], message=error["message"])
        sentence = f"Sorry, {FAILURE_SENTENCES.get(status, 'I could not finish this')}: "
        stream = MessageStream(emitter, message_id_for(run, "failure", run.steps), "")
        stream.text = sentence + error["message"]
        stream.complete(usage={}, status=MessageStatus.FAILED)
    emitter.emit("run.completed", status=status, usage=run.usage, error=error)
    return AdvanceOutcome(status)
