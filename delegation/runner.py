"""The run loop: claim a run, call its model (streaming), run its tools and delegations."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation

from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderError, TextDelta, ToolCallRequest, Usage
from agents.registry import Tool
from delegation.budget import (
    budget_lock_turn,
    budget_reserved_call,
    budget_take_model_call,
)
from delegation.citations import (
    citations_for,
    retrieved_passages,
)
from delegation.delegate_tool import DELEGATE
from delegation.emitter import RunEmitter
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
from delegation.tool_calls import message_id_for, run_tool_calls, save_progress
from delegation.transcript import pending_tool_calls
from delegation.tree import delegation_caller, delegation_reattempt, delegation_take_first
from delegation.usage.services import Charge, usage_charge, usage_hold

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
        return WAITING if run_tool_calls(run, emitter, pending, tools) else CONTINUE
    return _model_call(run, emitter, lease, tools)


def _model_call(
    run: Run, emitter: RunEmitter, lease: LeaseKeeper, tools: dict[str, Tool]
) -> StepResult:
    """Call the model once, streaming its text; run the tools it asks for."""
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
    spoken, step, usage_before = stream.text, run.steps, run.usage

    def charge() -> Charge:
        """The call's ledger row (at the step it was), which is what counts its tokens against
        the turn (delegation.budget.turn_tokens)."""
        run.steps, run.usage = step, usage_before
        charged = usage_charge(run=run, hold=hold, usage=usage, text=spoken, calls=calls)
        run.steps += 1
        return charged

    # The call's ledger row, the message's end and the step are one commit; the step's write is
    # fenced by the lease, so a run lost meanwhile keeps none of them (nor sends the message's
    # end). An answer that needs no check after it (`ends`) is saved as the run's end, in the
    # same write; a step that only asks experts starts them in the same commit, and is saved
    # by the run's wait for them (`delegating`: nothing in it waits on anything but the
    # database)...
    checks, ends, waiting = None, False, False
    delegating = bool(calls) and all(call.name == DELEGATE for call in calls)
    try:
        if not calls and not stream.text.strip():
            stream.add("(The model returned an empty answer.)")
        if not calls:
            stream.text, run.citations = _final_answer(run, stream.text)
            checks = _checks_to_rate(run)
            ends = checks == []
        run.transcript = [*run.transcript, _assistant_entry(stream.text, calls)]
        # ...an expert's answer that ends it is also reported to its caller in that commit.
        # Its caller is its first lock, before its own row and the ledger's spend counters, as
        # a stop locks them (caller before expert), and only while the expert is still its
        # worker's (its caller may be running a step of its own once it is not). An expert
        # that asks experts of its own takes its first delegation first: its first lock is
        # the root's, as for every run below the root that locks it
        # (tests/delegation/test_lock_order.py).
        reports = ends and run.parent_id is not None
        with transaction.atomic():
            caller = delegation_caller(child=run, held=True) if reports else None
            taken = None
            if delegating and run.root_id is not None:
                run.steps = step + 1  # (as after its charge: the take reserves its next call)
                first = pending_tool_calls(run.transcript)[0][1]
                taken = delegation_take_first(caller=run, call=first)
                if taken is None or taken.calls_left is None:  # (refused, or not taken)
                    budget_lock_turn(root_id=run.root_id)
            charged = charge()
            if caller is not None and caller.root_or_self is not run.root_or_self:
                # (read before this call's ledger row: the caller it hands over counts it)
                caller.root_or_self.turn_tokens += charged.tokens
            answer = None  # (an expert that reports writes it with its caller's message)
            if stream.started:
                citations = None if calls else run.citations
                usage_shown = charged.message_usage()
                answer = stream.complete(usage=usage_shown, citations=citations, save=not reports)
            if ends:
                _save_as_end(run, emitter, stream.text)
                if reports:
                    run_answer_reported(run=run, emitter=emitter, caller=caller, answer=answer)
            elif delegating:  # saved by its first write: a refusal's, or its wait
                waiting = run_tool_calls(
                    run,
                    emitter,
                    pending_tool_calls(run.transcript),
                    tools,
                    fresh=True,
                    unsaved=True,
                    taken=taken,
                )
            else:
                save_progress(run, emitter)
    except Exception as exc:
        emitter.closing = False  # (a report undone with its commit: the run has not ended)
        with transaction.atomic():  # ...but the call was made: what it cost stays on record
            charge()
        if isinstance(exc, RunStopped):
            stream.keep_text()
        else:
            stream.persist()  # the run is about to end failed: its end closes this message
        raise
    if calls and not delegating:
        waiting = run_tool_calls(
            run, emitter, pending_tool_calls(run.transcript), tools, fresh=True
        )
    if calls:
        return WAITING if waiting else CONTINUE
    if ends:
        run_answer_ended(run=run, emitter=emitter, reported=reports)
        return ENDED
    return StepResult(StepKind.ANSWERED, stream.text, checks)


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
