"""One step of a run: finish its pending tool calls, or call its model and commit what it said.

A model step is "call the model, then one commit": `_tool_step`, `_delegating_step`,
`_answer_step` or `_answer_reported`, each with its lock order in its docstring
(docs/runs.md, "A hop, statement by statement").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from django.db import transaction

from agents.providers import provider_for
from agents.providers.base import (
    ModelRequest,
    Note,
    ProviderError,
    TextDelta,
    ToolCallRequest,
    Usage,
)
from agents.registry import Tool
from config.db.pool import connection_lend
from delegation.models import Run, RunStatus
from delegation.runs.claim import NONE_ENDED, HandOver
from delegation.runs.emitter import RunEmitter
from delegation.runs.ended import run_mark_ended
from delegation.runs.ending import run_answer_ended
from delegation.runs.hooks import HOOKS
from delegation.runs.lease import LeaseKeeper
from delegation.runs.transcript import DELEGATE, pending_tool_calls
from delegation.runs.writes import RunStopped, run_finish
from delegation.steps.citations import citations_for, retrieved_passages
from delegation.steps.observed import ModelCallSpan
from delegation.steps.prompting import effective_tools, model_request
from delegation.steps.streaming import MessageStream
from delegation.steps.strict import run_is_strict, strict_refusal
from delegation.steps.tool_calls import (
    Calls,
    delegations_start,
    message_id_for,
    save_progress,
    tool_calls_resume,
    tool_calls_start,
)
from delegation.tree.budget import budget_lock_turn, budget_reserved_call, budget_take_model_call
from delegation.tree.report import delegation_caller_held, run_answer_reported
from delegation.usage.services import CallHold, Charge, usage_charge, usage_hold


@dataclass
class Delivery:
    """One delivery of a claimed run to this worker: what its steps share. `experts_ended`:
    the experts whose end handed the run over here, by call id, for its first step only (an
    id can come back in a later step, for another expert)."""

    run: Run
    emitter: RunEmitter
    lease: LeaseKeeper
    hand_over: HandOver | None
    experts_ended: Mapping[str, Run] = field(default_factory=lambda: NONE_ENDED)


class StepKind(Enum):
    """What one step of a run came to."""

    ANSWERED = "answered"  # the model answered without tool calls: check it, then end the run
    ENDED = "ended"  # ...and needed no check, so the step's own commit ended the run
    WAITING = "waiting"  # experts or a person are working: the run waits without a worker
    CONTINUE = "continue"  # tools ran: call the model again


@dataclass(frozen=True)
class StepResult:
    """One step's outcome, with the answer text when it answered, and (the entry agent's)
    the checks of the answers it relies on, when read with the step."""

    kind: StepKind
    answer: str = ""
    checks: list[tuple[str, dict[str, Any]]] | None = None


CONTINUE = StepResult(StepKind.CONTINUE)
WAITING = StepResult(StepKind.WAITING)
ENDED = StepResult(StepKind.ENDED)


def run_step(delivery: Delivery) -> StepResult:
    """One step: finish the tool calls still without a result, or make one model call."""
    run = delivery.run
    tools = effective_tools(run)
    pending = pending_tool_calls(run.transcript)
    ended, delivery.experts_ended = delivery.experts_ended, NONE_ENDED
    if pending:
        calls = Calls(run, delivery.emitter, pending, tools, delivery.hand_over)
        return WAITING if tool_calls_resume(calls, experts_ended=ended) else CONTINUE
    call = _call_model(delivery, tools)
    if not call.calls:
        return _answer_step(delivery, call)
    if all(c.name == DELEGATE for c in call.calls):
        return _delegating_step(delivery, call)
    return _tool_step(delivery, call, tools)


@dataclass
class ModelCall:
    """One model call made for a run's step: its stream, the tool calls it asked for, its
    usage and the price hold it is charged at (`charge`, in the commit of the step)."""

    stream: MessageStream
    calls: list[ToolCallRequest]
    usage: Usage
    hold: CallHold
    step: int  # the run's step before the call
    usage_before: dict[str, Any]
    span: ModelCallSpan

    def charge(self, run: Run) -> Charge:
        """Write the call's ledger row (at the step it was), which counts its tokens against
        the turn (delegation.tree.budget.turn_tokens), and count the step on `run`."""
        run.steps, run.usage = self.step, self.usage_before
        charged = usage_charge(
            run=run, hold=self.hold, usage=self.usage, text=self.stream.text, calls=self.calls
        )
        run.steps += 1
        self.span.charged(
            prompt_tokens=charged.prompt_tokens,
            completion_tokens=charged.completion_tokens,
            cost=charged.cost,
            currency=charged.currency,
            text=self.stream.text,
            calls=self.calls,
        )
        return charged


class BudgetExhausted(ProviderError):
    """The turn has no model call left for this run."""

    def __init__(self) -> None:
        super().__init__("budget_exhausted", "The turn used every model call of its budget.")


def _call_model(delivery: Delivery, tools: dict[str, Tool]) -> ModelCall:
    """Take the call from the turn's budget, hold its price and stream the model's answer."""
    run = delivery.run
    budget = budget_reserved_call(run=run) or budget_take_model_call(root=run.root_or_self)
    if budget is None:
        raise BudgetExhausted
    # The last call of a run offers no tools, so it answers: at the step limit, and when it is
    # the turn's last (each caller above it holds its answering call already).
    final = run.steps + 1 >= run.agent_config["max_steps"] or budget.must_answer()
    request = model_request(run, tools, final)
    provider = provider_for(run.agent_config["provider"])
    hold = usage_hold(run=run, provider=provider.name, request=request)  # budget_exceeded
    label = "offline" if provider.name == "offline" else request.model
    stream = MessageStream(delivery.emitter, message_id_for(run, "text", run.steps), label)
    connection_lend()  # the stream is all waiting: its connection serves other runs meanwhile
    span = ModelCallSpan(run, request, provider.name)
    with span.streaming():
        calls, usage = _stream(provider, request, stream, delivery.lease)
    return ModelCall(stream, calls, usage, hold, run.steps, run.usage, span)


def _stream(
    provider: Any, request: ModelRequest, stream: MessageStream, lease: LeaseKeeper
) -> tuple[list[ToolCallRequest], Usage]:
    """Relay one model call's text (and its notes, as `run.progress`); its tool calls and
    usage. NUL characters are dropped."""
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
            elif isinstance(event, Note):
                stream.emitter.emit("run.progress", text=event.text)
    except RunStopped:
        stream.keep_text()  # stopped or taken over: keep the words already shown, emit nothing
        raise
    except Exception:
        stream.persist()  # the run is about to end failed: its end closes this message
        raise
    return calls, usage


@contextmanager
def _step_commit(delivery: Delivery, call: ModelCall) -> Iterator[None]:
    """The step's commit: its writes, fenced by the run's lease, so a run lost meanwhile keeps
    none of them (nor sends the events they emit)."""
    try:
        with transaction.atomic():
            yield
    except Exception as exc:
        _failed_after_call(delivery, call, exc)
        raise


def _failed_after_call(delivery: Delivery, call: ModelCall, exc: Exception) -> None:
    """A step that failed after its model call: what the call cost is recorded on its own,
    and the text shown is kept (stopped) or saved streaming (the run is about to end failed:
    its end closes the message)."""
    delivery.emitter.closing = False  # (a report undone with its commit: the run has not ended)
    with transaction.atomic():
        call.charge(delivery.run)
    if isinstance(exc, RunStopped):
        call.stream.keep_text()
    else:
        call.stream.persist()


def _record_call(
    run: Run, call: ModelCall, citations: list[dict[str, Any]] | None = None
) -> Charge:
    """Within a step's commit: the call's ledger row, its message's end and its entry in the
    run's transcript (saved by the step's write of the run)."""
    charged = call.charge(run)
    if call.stream.started:
        call.stream.complete(usage=charged.message_usage(), citations=citations)
    run.transcript = [*run.transcript, _assistant_entry(call.stream.text, call.calls)]
    return charged


def _tool_step(delivery: Delivery, call: ModelCall, tools: dict[str, Tool]) -> StepResult:
    """A step whose answer calls tools: the call and the run's progress in one commit (the
    ledger's spend counters, then the run's own row), then each tool call in a commit of its
    own, saved before the next (an expert it asks locks the turn's root, then writes its run)."""
    run, emitter = delivery.run, delivery.emitter
    with _step_commit(delivery, call):
        _record_call(run, call)
        save_progress(run, emitter)
    pending = pending_tool_calls(run.transcript)
    waiting = tool_calls_start(Calls(run, emitter, pending, tools, delivery.hand_over))
    return WAITING if waiting else CONTINUE


def _delegating_step(delivery: Delivery, call: ModelCall) -> StepResult:
    """A step whose answer only asks experts: the call, the experts' runs, the refusals and the
    run's wait (or progress, when every ask was refused) in one commit. Lock order: the turn's
    root first (an expert's step locks it on its own, as every transaction below the root
    that locks it does), then the ledger's spend counters, then the run's own row."""
    run = delivery.run
    with _step_commit(delivery, call):
        if run.root_id is not None:
            budget_lock_turn(root_id=run.root_id)
        _record_call(run, call)
        pending = pending_tool_calls(run.transcript)
        waiting = delegations_start(Calls(run, delivery.emitter, pending, {}, delivery.hand_over))
    return WAITING if waiting else CONTINUE


def _answer_step(delivery: Delivery, call: ModelCall) -> StepResult:
    """A step whose answer calls no tool: the final answer with its citations. An answer that
    needs no check after it ends the run in its own commit (reported to its caller there too,
    for an expert: `_answer_reported`); else it is saved, and checked before the run ends.
    Lock order: the ledger's spend counters, then the run's own row."""
    run, stream = delivery.run, call.stream
    try:
        if not stream.text.strip():
            stream.add("(The model returned an empty answer.)")
        stream.text, run.citations = _final_answer(run, stream.text)
        checks = _checks_to_rate(run)
    except Exception as exc:
        _failed_after_call(delivery, call, exc)
        raise
    if checks != []:
        with _step_commit(delivery, call):
            _record_call(run, call, run.citations)
            save_progress(run, delivery.emitter)
        return StepResult(StepKind.ANSWERED, stream.text, checks)
    if run.parent_id is not None:
        _answer_reported(delivery, call)
        return ENDED
    with _step_commit(delivery, call):
        _record_call(run, call, run.citations)
        _save_as_end(run, delivery.emitter, stream.text)
    run_answer_ended(run=run, emitter=delivery.emitter)
    return ENDED


def _answer_reported(delivery: Delivery, call: ModelCall) -> None:
    """An expert's answer that ends it, reported to its caller in the same commit: the
    answer, the run's end, the caller's message of the delegation and its resumption (handed
    over to this task body, when it may run it next). Lock order: the caller first, before
    the ledger's spend counters and the expert's own row, as a stop locks them (caller before
    expert), and only while the expert is still its worker's (`delegation_caller_held`)."""
    run, emitter = delivery.run, delivery.emitter
    with _step_commit(delivery, call):
        caller = delegation_caller_held(child=run)
        _record_call(run, call, run.citations)
        _save_as_end(run, emitter, call.stream.text)
        run_answer_reported(run=run, emitter=emitter, caller=caller, hand_over=delivery.hand_over)
    run_mark_ended(run.id)


def _checks_to_rate(run: Run) -> list[tuple[str, dict[str, Any]]] | None:
    """What the run's answer still needs once its step is saved: None, a check (its agent
    checks answers; a fallback attempt may start before the run ends); else the checks the
    turn's answer is rated from (the entry agent's: its experts'; none for an expert)."""
    if HOOKS.answers_checked(run):
        return None
    return HOOKS.turn_checks(run) if run.parent_id is None else []


def _save_as_end(run: Run, emitter: RunEmitter, answer: str) -> None:
    """The answering step's save, as the run's end (fenced by its lease; RunStopped if the
    run is no longer this worker's)."""
    run.last_seq = emitter.seq
    if not run_finish(run=run, status=RunStatus.SUCCEEDED, answer=answer):
        raise RunStopped


def _assistant_entry(text: str, calls: list[Any]) -> dict[str, Any]:
    """The model's answer as a transcript entry: its text and the tool calls it asked for."""
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        entry["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return entry


def _final_answer(run: Run, text: str) -> tuple[str, list[dict[str, Any]]]:
    """The answer and the knowledge it cites; a strict agent that found no passage answers
    with what is missing instead."""
    if run_is_strict(run) and not retrieved_passages(run):
        return strict_refusal(run), []
    return text, citations_for(run, text)
