"""The run loop: claim a run, call its model (streaming), run its tools and delegations."""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from enum import Enum
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderError, TextDelta, ToolCallRequest, Usage
from agents.registry import Tool, ToolContext, ToolResult, execute, tools_for
from chat.models import MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.budget import budget_charge_tokens, budget_reserve_model_call, budget_state
from delegation.citations import (
    KNOWLEDGE_TOOLS,
    citations_for,
    references_from_child,
    references_number,
    renumber,
    retrieved_passages,
)
from delegation.delegate_tool import DELEGATE, delegate_tool_schema
from delegation.emitter import RunEmitter
from delegation.ending import run_end, run_failure
from delegation.guards import delegation_targets, experts_out_of_reach
from delegation.lease import LeaseKeeper
from delegation.models import Run, RunStatus
from delegation.services import (
    RunStopped,
    run_claim,
    run_release,
    run_save_progress,
    run_wait_or_continue,
    usage_add,
)
from delegation.streaming import MessageStream
from delegation.strict import CITE_RULE, STRICT_RULE, strict_refusal
from delegation.tree import delegation_begin, delegation_result

logger = logging.getLogger(__name__)


class StepKind(Enum):
    """What one step of a run came to."""

    ANSWERED = "answered"  # the model answered without tool calls: the run is done
    WAITING = "waiting"  # delegations are still working: the run waits without a worker
    CONTINUE = "continue"  # tools ran: call the model again


@dataclass(frozen=True)
class StepResult:
    """One step's outcome, with the answer text when it answered."""

    kind: StepKind
    answer: str = ""


CONTINUE = StepResult(StepKind.CONTINUE)
WAITING = StepResult(StepKind.WAITING)


@dataclass(frozen=True)
class AdvanceOutcome:
    """What one delivery of advance_run did: `retry_in` > 0 asks the task to try again later."""

    status: str
    retry_in: float = 0.0
    continue_later: bool = False


def message_id_for(run: Run, kind: str, step: int, index: int = 0) -> uuid.UUID:
    """Deterministic message ids, so a re-run of a step upserts instead of duplicating."""
    return uuid.uuid5(run.id, f"{kind}:{step}:{index}")


def run_advance(*, run_id: Any, worker: str = "") -> AdvanceOutcome:
    """Advance a run until it answers, fails, waits for experts, or should continue later;
    `worker` names the process (its Celery hostname) so a restart can find its orphans."""
    run, retry_in = run_claim(run_id=run_id, worker=worker)
    if run is None:
        return AdvanceOutcome("busy" if retry_in else "noop", retry_in=retry_in)
    emitter = RunEmitter(run, foreign=run.taken_over)
    try:
        with LeaseKeeper(run) as lease:
            return _advance(run, emitter, lease)
    except RunStopped:
        return AdvanceOutcome("stopped")  # whoever ended the run closed its messages
    except ProviderError as exc:
        return _end(run, emitter, RunStatus.FAILED, error=run_failure(exc.code, exc.message))
    except Exception as exc:
        logger.exception("run %s failed", run.id)
        return _end(run, emitter, RunStatus.FAILED, error=run_failure("internal_error", repr(exc)))


def _advance(run: Run, emitter: RunEmitter, lease: LeaseKeeper) -> AdvanceOutcome:
    task_started = time.monotonic()
    while True:
        lease.check()
        if timezone.now() > run.deadline:
            error = run_failure("run_timeout", "The run went past its deadline.")
            return _end(run, emitter, RunStatus.TIMED_OUT, error=error)
        result = _step(run, emitter, lease)
        if result.kind is StepKind.WAITING:
            return AdvanceOutcome(RunStatus.WAITING)
        if result.kind is StepKind.ANSWERED:
            return _end(run, emitter, RunStatus.SUCCEEDED, answer=result.answer)
        if _should_hand_over(task_started):
            run_release(run=run)
            return AdvanceOutcome(RunStatus.QUEUED, continue_later=True)


def _should_hand_over(task_started: float) -> bool:
    """Stop taking steps when one more model call could overrun the task's soft time limit."""
    elapsed = time.monotonic() - task_started
    return elapsed + settings.MODEL_CALL_WORST_SECONDS > settings.CELERY_TASK_SOFT_TIME_LIMIT


def _step(run: Run, emitter: RunEmitter, lease: LeaseKeeper) -> StepResult:
    """One step: finish the tool calls still without a result, or make one model call."""
    tools = _effective_tools(run)
    pending = _pending_tool_calls(run.transcript)
    if pending:
        return _run_tools(run, emitter, pending, tools)
    return _model_call(run, emitter, lease, tools)


def _model_call(
    run: Run, emitter: RunEmitter, lease: LeaseKeeper, tools: dict[str, Tool]
) -> StepResult:
    """Call the model once, streaming its text; run the tools it asks for."""
    budget = budget_state(root_id=run.root_id_or_self)
    if not budget_reserve_model_call(root_id=run.root_id_or_self, limit=budget.max_model_calls):
        raise _BudgetExhausted
    # The last call of a run offers no tools, so it answers: at the step limit, and when the
    # turn's budget only has room left for this run and each caller above it to answer.
    final = run.steps + 1 >= run.agent_config["max_steps"] or budget.must_answer(depth=run.depth)
    request = _request(run, tools, final)
    provider = provider_for(run.agent_config["provider"])
    label = "offline" if provider.name == "offline" else request.model
    stream = MessageStream(emitter, message_id_for(run, "text", run.steps), label)
    calls, usage = _stream(provider, request, stream, lease)
    run.usage = usage_add(run.usage, usage.prompt_tokens, usage.completion_tokens)
    budget_charge_tokens(root_id=run.root_id_or_self, tokens=usage.total_tokens)
    run.steps += 1
    if not calls and not stream.text.strip():
        stream.add("(The model returned an empty answer.)")
    if not calls:
        stream.text, run.citations = _final_answer(run, stream.text)
    if stream.started:
        stream.complete(
            usage={
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
            },
            citations=None if calls else run.citations,
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
        return _run_tools(run, emitter, _pending_tool_calls(run.transcript), tools)
    return StepResult(StepKind.ANSWERED, stream.text)


def _final_answer(run: Run, text: str) -> tuple[str, list[dict[str, Any]]]:
    """The answer and the knowledge it cites; a strict agent that found no passage answers
    with what is missing instead."""
    if run.agent_config.get("answer_from_knowledge_only") and not retrieved_passages(run):
        return strict_refusal(run), []
    return text, citations_for(run, text)


class _BudgetExhausted(ProviderError):
    """The turn has no model call left for this run."""

    def __init__(self) -> None:
        super().__init__("budget_exhausted", "The turn used every model call of its budget.")


def _stream(
    provider: Any, request: ModelRequest, stream: MessageStream, lease: LeaseKeeper
) -> tuple[list[ToolCallRequest], Usage]:
    """Relay one model call's text; its tool calls and usage. NUL characters are dropped."""
    calls: list[ToolCallRequest] = []
    usage = Usage()
    try:
        for event in provider.stream(request):
            lease.check()
            if isinstance(event, TextDelta):
                stream.add(event.text.replace("\x00", ""))
            elif isinstance(event, ToolCallRequest):
                arguments = event.arguments.replace("\x00", "").replace("\\u0000", "")
                calls.append(ToolCallRequest(event.id, event.name, arguments))
            elif isinstance(event, Usage):
                usage = event
    except RunStopped:
        stream.keep_text()  # stopped or taken over: keep the words already shown, emit nothing
        raise
    except Exception:
        stream.persist()  # the run is about to end failed: its end closes this message
        raise
    return calls, usage


def _request(run: Run, tools: dict[str, Tool], final: bool) -> ModelRequest:
    """The model request of this step: the pinned config, transcript and offered tools."""
    config = run.agent_config
    schemas = [] if final else [t.openai_schema() for t in tools.values()]
    targets = [] if final else _targets(run)
    if targets:
        schemas.append(delegate_tool_schema(targets))
    return ModelRequest(
        model=config["model"] or settings.OPENAI_MODEL,
        messages=_model_messages(run),
        tools=schemas,
        temperature=config["temperature"],
        max_tokens=config["max_tokens"],
        base_url=config["base_url"],
        api_key_env=config.get("api_key_env", ""),
    )


def _targets(run: Run) -> list[Any]:
    """Who the run may delegate to, looked up once per delivery."""
    if not hasattr(run, "_delegation_targets"):
        run._delegation_targets = delegation_targets(caller=run)  # type: ignore[attr-defined]
    return run._delegation_targets  # type: ignore[attr-defined]


def _model_messages(run: Run) -> list[dict[str, Any]]:
    """System prompt (with the experts this user may not use, so the model can say so), then
    the transcript."""
    prompt = run.agent_config["system_prompt"]
    out_of_reach = experts_out_of_reach(caller=run)
    if out_of_reach:
        names = "; ".join(out_of_reach)
        prompt = (
            f"{prompt}\n\nExperts that exist but this user may not use (no access): {names}. "
            "If the request needs one of them, tell the user plainly that they do not have "
            "access and whom to ask; do not guess its answer."
        ).strip()
    config = run.agent_config
    rules = []
    if KNOWLEDGE_TOOLS & set(config["tool_keys"]) or config.get("allowed_subagents"):
        rules.append(CITE_RULE)
    if config.get("answer_from_knowledge_only"):
        rules.append(STRICT_RULE)
    prompt = "\n\n".join(part for part in [prompt, *rules] if part)
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
) -> StepResult:
    """Execute each pending call, saving after each so a crash never runs one twice. Delegate
    calls start children (or collect their results when they have ended)."""
    step = run.steps - 1
    waiting = False
    for index, call in pending:
        message_id = message_id_for(run, "tool", step, index)
        if call["function"]["name"] == DELEGATE:
            content = _delegation(run, emitter, call, message_id)
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
    return CONTINUE


def _delegation(
    run: Run, emitter: RunEmitter, call: dict[str, Any], message_id: uuid.UUID
) -> str | None:
    """The result of a delegate call whose child has ended; None while it works (a call with
    no child yet starts one, or is refused with the refusal as its result)."""
    child = run.children.filter(parent_tool_call_id=call["id"]).first()
    if child is None:
        return delegation_begin(caller=run, emitter=emitter, call=call, message_id=message_id)
    if not child.is_final:
        return None
    content = delegation_result(child=child)
    if child.status != RunStatus.SUCCEEDED or not child.citations:
        return content
    # The expert's sources join this run's numbering, so this run's answer can cite them.
    mapping = references_from_child(run, child)
    body = json.loads(content)
    body["result"]["answer"] = renumber(body["result"]["answer"], mapping)
    body["result"]["citations"] = [
        {"ref": mapping[c["ref"]], "title": c["title"], "quote": c["quote"]}
        for c in child.citations
    ]
    return json.dumps(body, ensure_ascii=False)


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
        if result.ok and name in KNOWLEDGE_TOOLS and isinstance(result.data, dict):
            result = ToolResult(True, data=references_number(run, result.data))
    outcome = (
        {"ok": result.ok, "result": result.data}
        if result.ok
        else {"ok": False, "error": {"code": result.error_code, "message": result.error}}
    )
    message_upsert(
        message_id=message_id,
        session_id=run.session_id,
        role=MessageRole.TOOL,
        run_id=run.id,
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
