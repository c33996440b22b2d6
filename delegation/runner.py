"""The run loop: claim a run, call its model (streaming), run its tools and delegations."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation

from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderError, TextDelta, ToolCallRequest, Usage
from agents.registry import Tool
from delegation.budget import budget_lock_turn, budget_reserved_call, budget_take_model_call
from delegation.citations import (
    citations_for,
    retrieved_passages,
)
from delegation.delegate_tool import DELEGATE
from delegation.emitter import RunEmitter
from delegation.ended import run_mark_ended
from delegation.ending import run_answer_ended, run_answer_reported, run_end, run_failure
from delegation.humans.activity import activity_record
from delegation.humans.fallback import RESTARTS, fallback_plan
from delegation.humans.models import ActivityKind, Verdict
from delegation.humans.reviews import turn_assess, turn_checks
from delegation.humans.validation import Check, answer_check, answers_checked
from delegation.lease import LeaseKeeper
from delegation.models import Run, RunStatus
from delegation.prompting import effective_tools, model_request
from delegation.routing.services import route_turn
from delegation.services import (
    RunStopped,
    run_claim,
    run_finish,
    run_release,
)
from delegation.streaming import MessageStream
from delegation.strict import run_is_strict, strict_refusal
from delegation.tool_calls import (
    delegations_start,
    message_id_for,
    save_progress,
    tool_calls_resume,
    tool_calls_start,
)
from delegation.transcript import pending_tool_calls
from delegation.tree import delegation_caller, delegation_reattempt
from delegation.usage.services import CallHold, Charge, usage_charge, usage_hold

logger = logging.getLogger(__name__)


class StepKind(Enum):
    """What one step of a run came to."""

    ANSWERED = "answered"  # the model answered without tool calls: the run is done
    ENDED = "ended"  # ...and needed no check, so the step's own commit ended the run
    WAITING = "waiting"  # delegations are still working: the run waits without a worker
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


@dataclass(frozen=True)
class AdvanceOutcome:
    """What one delivery of advance_run did: `retry_in` > 0 asks the task to try again later."""

    status: str
    retry_in: float = 0.0
    continue_later: bool = False


def run_advance(
    *, run_id: Any, worker: str = "", task_started: float | None = None
) -> AdvanceOutcome:
    """Advance a run until it answers, fails, waits for experts, or should continue later;
    `worker` names the process (its Celery hostname) so a restart can find its orphans, and
    `task_started` (monotonic) is when its task began, when it ran other runs first."""
    claiming = time.monotonic()
    run, retry_in = run_claim(run_id=run_id, worker=worker)
    if run is None:
        return AdvanceOutcome("busy" if retry_in else "noop", retry_in=retry_in)
    # Its messages, tool results and failure notes are in the user's language.
    with translation.override(run.language or None):
        emitter = RunEmitter(run, foreign=run.taken_over, since=claiming)
        return _deliver(run, emitter, task_started or time.monotonic())


def run_has_time(task_started: float) -> bool:
    """Whether a task that began at `task_started` (monotonic) may still make a model call
    within its soft time limit."""
    elapsed = time.monotonic() - task_started
    return elapsed + settings.MODEL_CALL_WORST_SECONDS <= settings.CELERY_TASK_SOFT_TIME_LIMIT


def _deliver(run: Run, emitter: RunEmitter, task_started: float) -> AdvanceOutcome:
    """One delivery of a claimed run, under its lease; any failure ends it with a plain note."""
    try:
        with LeaseKeeper(run) as lease:
            return _advance(run, emitter, lease, task_started)
    except RunStopped:
        return AdvanceOutcome("stopped")  # whoever ended the run closed its messages
    except ProviderError as exc:
        return _end(run, emitter, RunStatus.FAILED, error=run_failure(exc.code, exc.message))
    except Exception as exc:
        logger.exception("run %s failed", run.id)
        return _end(run, emitter, RunStatus.FAILED, error=run_failure("internal_error", repr(exc)))


def _advance(
    run: Run, emitter: RunEmitter, lease: LeaseKeeper, task_started: float
) -> AdvanceOutcome:
    if run.parent_id is None and run.routing is None:
        route_turn(run=run, emitter=emitter)  # once per turn, before the entry agent's first step
    while True:
        lease.check()
        if timezone.now() > run.deadline:
            error = run_failure("run_timeout", "The run went past its deadline.")
            return _end(run, emitter, RunStatus.TIMED_OUT, error=error)
        result = _step(run, emitter, lease)
        if result.kind is StepKind.WAITING:
            return AdvanceOutcome(RunStatus.WAITING)
        if result.kind is StepKind.ENDED:
            return AdvanceOutcome(RunStatus.SUCCEEDED)
        if result.kind is StepKind.ANSWERED:
            return _answered(run, emitter, result.answer, result.checks)
        if not run_has_time(task_started):
            run_release(run=run)
            return AdvanceOutcome(RunStatus.QUEUED, continue_later=True)


def _answered(
    run: Run,
    emitter: RunEmitter,
    answer: str,
    checks: list[tuple[str, dict[str, Any]]] | None,
) -> AdvanceOutcome:
    """End a run that answered, after its answer was checked where its agent asks for it: an
    expert's invalid answer takes the next step of its fallback chain (a new attempt starts
    before this run ends, so its caller keeps waiting); the entry agent's answer is rated from
    the checks of the turn (`checks`, when its step read them) and queued for review when one
    failed."""
    check = answer_check(run=run, answer=answer)
    if check is not None:
        check.outcome = "accepted" if check.valid else _fallback(run, check)
        run.validation = check.as_dict()
        Verdict.objects.filter(pk=check.verdict_id).update(outcome=check.outcome)
    if run.parent_id is None:
        final = message_id_for(run, "text", max(0, run.steps - 1))
        turn_assess(run=run, emitter=emitter, message_id=final, answer=answer, checks=checks)
    return _end(run, emitter, RunStatus.SUCCEEDED, answer=answer)  # saves the quality too


def _fallback(run: Run, check: Check) -> str:
    """The fallback step taken for an invalid answer (an expert's; the entry agent's has no
    caller to ask again: it is passed on marked low confidence)."""
    if run.parent_id is None:
        return "low_confidence"
    plan = fallback_plan(child=run, issue=check.issue)
    if plan.step in RESTARTS:
        run.validation = {**check.as_dict(), "outcome": plan.step}  # read by the attempt
        if delegation_reattempt(child=run, plan=plan) is not None:
            return plan.step
        return "low_confidence"
    return plan.step


def _step(run: Run, emitter: RunEmitter, lease: LeaseKeeper) -> StepResult:
    """One step: finish the tool calls still without a result, or make one model call."""
    tools = effective_tools(run)
    pending = pending_tool_calls(run.transcript)
    if pending:
        return WAITING if tool_calls_resume(run, emitter, pending, tools) else CONTINUE
    return _model_call(run, emitter, lease, tools)


def _model_call(
    run: Run, emitter: RunEmitter, lease: LeaseKeeper, tools: dict[str, Tool]
) -> StepResult:
    """Call the model once, streaming its text; then commit the step its answer makes."""
    call = _call_model(run, emitter, lease, tools)
    if not call.calls:
        return _answer_step(run, emitter, call)
    if all(c.name == DELEGATE for c in call.calls):
        return _delegating_step(run, emitter, call)
    return _tool_step(run, emitter, call, tools)


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

    def charge(self, run: Run) -> Charge:
        """Write the call's ledger row (at the step it was), which counts its tokens against
        the turn (delegation.budget.turn_tokens), and count the step on `run`."""
        run.steps, run.usage = self.step, self.usage_before
        charged = usage_charge(
            run=run, hold=self.hold, usage=self.usage, text=self.stream.text, calls=self.calls
        )
        run.steps += 1
        return charged


def _call_model(
    run: Run, emitter: RunEmitter, lease: LeaseKeeper, tools: dict[str, Tool]
) -> ModelCall:
    """Take the call from the turn's budget, hold its price and stream the model's answer."""
    budget = budget_reserved_call(run=run) or budget_take_model_call(root=run.root_or_self)
    if budget is None:
        raise _BudgetExhausted
    # The last call of a run offers no tools, so it answers: at the step limit, and when it is
    # the turn's last (each caller above it holds its answering call already).
    final = run.steps + 1 >= run.agent_config["max_steps"] or budget.must_answer()
    request = model_request(run, tools, final)
    provider = provider_for(run.agent_config["provider"])
    hold = usage_hold(run=run, provider=provider.name, request=request)  # budget_exceeded
    label = "offline" if provider.name == "offline" else request.model
    stream = MessageStream(emitter, message_id_for(run, "text", run.steps), label)
    calls, usage = _stream(provider, request, stream, lease)
    return ModelCall(stream, calls, usage, hold, run.steps, run.usage)


@contextmanager
def _step_commit(run: Run, emitter: RunEmitter, call: ModelCall) -> Iterator[None]:
    """The step's commit: its writes, fenced by the run's lease, so a run lost meanwhile keeps
    none of them (nor sends the events they emit)."""
    try:
        with transaction.atomic():
            yield
    except Exception as exc:
        _failed_after_call(run, emitter, call, exc)
        raise


def _failed_after_call(run: Run, emitter: RunEmitter, call: ModelCall, exc: Exception) -> None:
    """A step that failed after its model call: what the call cost is recorded on its own,
    and the text shown is kept (stopped) or saved streaming (the run is about to end failed:
    its end closes the message)."""
    emitter.closing = False  # (a report undone with its commit: the run has not ended)
    with transaction.atomic():
        call.charge(run)
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


def _tool_step(
    run: Run, emitter: RunEmitter, call: ModelCall, tools: dict[str, Tool]
) -> StepResult:
    """A step whose answer calls tools: the call and the run's progress in one commit (the
    run's own row; the ledger's spend counters first), then each tool call runs in a commit
    of its own, saved before the next."""
    with _step_commit(run, emitter, call):
        _record_call(run, call)
        save_progress(run, emitter)
    waiting = tool_calls_start(run, emitter, pending_tool_calls(run.transcript), tools)
    return WAITING if waiting else CONTINUE


def _delegating_step(run: Run, emitter: RunEmitter, call: ModelCall) -> StepResult:
    """A step whose answer only asks experts: the call, the experts' runs, the refusals and the
    run's wait (or progress, when every ask was refused) in one commit. Lock order: the turn's
    root first (an expert's step locks it on its own, as every transaction below the root
    that locks it does), then the ledger's spend counters, then the run's own row."""
    with _step_commit(run, emitter, call):
        if run.root_id is not None:
            budget_lock_turn(root_id=run.root_id)
        _record_call(run, call)
        waiting = delegations_start(run, emitter, pending_tool_calls(run.transcript))
    return WAITING if waiting else CONTINUE


def _answer_step(run: Run, emitter: RunEmitter, call: ModelCall) -> StepResult:
    """A step whose answer calls no tool: the final answer with its citations. An answer that
    needs no check after it ends the run in its own commit (reported to its caller there too,
    for an expert); else it is saved, and checked before the run ends (`_answered`)."""
    stream = call.stream
    try:
        if not stream.text.strip():
            stream.add("(The model returned an empty answer.)")
        stream.text, run.citations = _final_answer(run, stream.text)
        checks = _checks_to_rate(run)
    except Exception as exc:
        _failed_after_call(run, emitter, call, exc)
        raise
    if checks != []:
        with _step_commit(run, emitter, call):
            _record_call(run, call, run.citations)
            save_progress(run, emitter)
        return StepResult(StepKind.ANSWERED, stream.text, checks)
    if run.parent_id is not None:
        _answer_reported(run, emitter, call)
        return ENDED
    with _step_commit(run, emitter, call):
        _record_call(run, call, run.citations)
        _save_as_end(run, emitter, stream.text)
    run_answer_ended(run=run, emitter=emitter)
    return ENDED


def _answer_reported(run: Run, emitter: RunEmitter, call: ModelCall) -> None:
    """An expert's answer that ends it, reported to its caller in the same commit: the
    answer, the run's end, the caller's message of the delegation and its resumption. Lock
    order: the caller first, before the ledger's spend counters and the expert's own row, as a
    stop locks them (caller before expert), and only while the expert is still its worker's
    (its caller may be running a step of its own once it is not: `delegation_caller`)."""
    with _step_commit(run, emitter, call):
        caller = delegation_caller(child=run, held=True)
        charged = _record_call(run, call, run.citations)
        if caller is not None and caller.root_or_self is not run.root_or_self:
            # (read before this call's ledger row: the caller it hands over counts it)
            caller.root_or_self.turn_tokens += charged.tokens
        _save_as_end(run, emitter, call.stream.text)
        run_answer_reported(run=run, emitter=emitter, caller=caller)
    run_mark_ended(run.id)


def _checks_to_rate(run: Run) -> list[tuple[str, dict[str, Any]]] | None:
    """What the run's answer still needs once its step is saved: None, a check (its agent
    checks answers; a fallback attempt may start before the run ends); else the checks the
    turn's answer is rated from (the entry agent's: its experts'; none for an expert)."""
    if answers_checked(run):
        return None
    return turn_checks(run=run) if run.parent_id is None else []


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
    if error:
        activity_record(
            kind=ActivityKind.ERROR,
            run=run,
            summary=f"{run.agent_config['display_name']} {status}: {error['message']}",
            data={"code": error["code"], "detail": error.get("detail", "")[:500]},
        )
    return AdvanceOutcome(status)
