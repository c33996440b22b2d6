"""Executing a step's tool calls: ordinary tools inline, delegations as child runs; each result
is saved before the next call, so a crash never runs a finished call again."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.registry import Tool
from config.db.prepared import PreparedLookup
from delegation.models import Run, RunStatus
from delegation.runs.claim import HandOver
from delegation.runs.emitter import RunEmitter
from delegation.runs.hooks import HOOKS
from delegation.runs.transcript import DELEGATE
from delegation.runs.waits import run_wait_or_continue
from delegation.runs.writes import run_save_progress, run_wait
from delegation.steps.citations import (
    references_from_child,
    renumber,
)
from delegation.steps.tool_run import attempt_started, person_asked, tool_run
from delegation.tree.ask import delegation_begin
from delegation.tree.report import delegation_result


def message_id_for(run: Run, kind: str, step: int, index: int = 0) -> uuid.UUID:
    """Deterministic message ids, so a re-run of a step upserts instead of duplicating."""
    return uuid.uuid5(run.id, f"{kind}:{step}:{index}")


@dataclass(frozen=True)
class Calls:
    """A step's calls still without a result, and where they run: the run, its emitter, the
    tools it may use, and the task body that may run an expert they start next itself."""

    run: Run
    emitter: RunEmitter
    pending: list[tuple[int, dict[str, Any]]]
    tools: dict[str, Tool]
    hand_over: HandOver | None


def tool_calls_start(calls: Calls) -> bool:
    """Execute the calls of the model's answer just saved (none has an expert yet: a model
    that repeats an earlier call's id gets a new one), saving after each so a crash never
    runs one twice; True when the run now waits for experts or a person."""
    return _execute(calls, ended=None)


def tool_calls_resume(calls: Calls, *, experts_ended: Mapping[str, Run]) -> bool:
    """Finish the calls of a step still without a result (after its experts ended, a person
    answered, or a crash): an expert's result is collected, as its end handed the run over
    (`experts_ended`, by call id) or read (again, the same, after a crash: saved with the
    run's next write); others are executed as `tool_calls_start` does. True when the run
    waits again."""
    return _execute(calls, ended=experts_ended)


def _execute(calls: Calls, *, ended: Mapping[str, Run] | None) -> bool:
    """Each pending call in turn (`ended`: None for fresh calls, which have no expert yet;
    else the experts known ended, the others read)."""
    run, emitter = calls.run, calls.emitter
    step = run.steps - 1
    waiting = False
    for index, call in calls.pending:
        message_id = message_id_for(run, "tool", step, index)
        name = call["function"]["name"]
        if ended is not None and name == DELEGATE:
            # The newest child of this call (a reattempt is a new child with the same id).
            child = _newest_child(run, call["id"], ended)
            if child is not None:
                if child.is_final:
                    run.transcript = [*run.transcript, _tool_entry(call, _child_result(run, child))]
                else:
                    waiting = True
                continue
        if in_one_commit(calls.tools.get(name)):
            # Its writes, its message and the run's progress commit together: a crash undoes
            # all of them, and the call runs again, once.
            with transaction.atomic():
                content = _call(calls, call, message_id)
                if content is not None:
                    run.transcript = [*run.transcript, _tool_entry(call, content)]
                    save_progress(run, emitter)
        else:
            content = _call(calls, call, message_id)
            if content is not None:
                run.transcript = [*run.transcript, _tool_entry(call, content)]
                save_progress(run, emitter)
        waiting = waiting or content is None
    run.last_seq = emitter.seq
    return waiting and run_wait_or_continue(run=run)


def _call(calls: Calls, call: dict[str, Any], message_id: uuid.UUID) -> str | None:
    """Execute one call: its result content, or None when it waits (an expert started, or a
    person must answer or approve)."""
    run, emitter, tools, name = calls.run, calls.emitter, calls.tools, call["function"]["name"]
    if name == DELEGATE:
        return delegation_begin(
            caller=run,
            emitter=emitter,
            call=call,
            message_id=message_id,
            hand_over=calls.hand_over,
        )
    registered = tools.get(name)
    # (A tool whose effects stay in this database runs in one commit with its result instead.)
    once = registered is not None and not registered.safe_to_repeat and registered.outside
    # A call not safe to repeat whose message exists already was started before (a crash, or
    # a person was asked): a person decides whether it runs (again), never the engine alone.
    if (
        HOOKS.person_wanted(run, name, tools, call["function"]["arguments"])
        or (once and attempt_started(message_id))
        or person_asked(message_id)
    ):
        return HOOKS.person_call(run, emitter, call, message_id, tools)
    return tool_run(run, emitter, call, message_id, tools, mark_attempt=once)


def in_one_commit(registered: Tool | None) -> bool:
    """Whether a call runs in one commit with its result and the run's progress: a tool that
    changes data in this database only (an outside one cannot be rolled back)."""
    return registered is not None and registered.side_effect and not registered.outside


def delegations_start(calls: Calls) -> bool:
    """Within the commit of a step that only asks experts: ask each (a refusal is the call's
    result at once), then save the run: waiting when an expert started (none of them can
    have ended: they start in this uncommitted transaction, so nothing is read), else its
    progress. True when it waits."""
    run, emitter = calls.run, calls.emitter
    step = run.steps - 1
    started = False
    for index, call in calls.pending:
        message_id = message_id_for(run, "tool", step, index)
        content = delegation_begin(
            caller=run,
            emitter=emitter,
            call=call,
            message_id=message_id,
            hand_over=calls.hand_over,
        )
        if content is None:
            started = True
        else:
            run.transcript = [*run.transcript, _tool_entry(call, content)]
    if started:
        run.last_seq = emitter.seq
        run_wait(run=run)
    else:
        save_progress(run, emitter)
    return started


# What a caller never reads of its expert's run when taking its result.
CHILD_WORKING = ("transcript", "task", "routing", "routing_request")
# The newest child of a call (a reattempt is a new child with the same call id): its ending
# only, not its working (its transcript can be long). Compiled once per connection.
_NEWEST_CHILD = PreparedLookup(
    lambda caller, call: (
        Run.objects.filter(parent_id=caller, parent_tool_call_id=call)
        .defer(*CHILD_WORKING)
        .order_by("-created_at")
    ),
    keys=[Run._meta.pk, Run._meta.get_field("parent_tool_call_id")],
)


def _newest_child(run: Run, call_id: str, ended: Mapping[str, Run]) -> Run | None:
    """The newest child of the run's delegate call `call_id`: the expert whose end handed the
    run over to this task body (`ended`: the newest of its call, as a superseded answer
    resumes no one), or read."""
    child = ended.get(call_id)
    return child if child is not None else _NEWEST_CHILD.row(run.pk, call_id)


def _tool_entry(call: dict[str, Any], content: str) -> dict[str, Any]:
    """A call's result as a transcript entry."""
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


def _child_result(run: Run, child: Run) -> str:
    """The result of a delegate call whose expert has ended, as its caller's model reads it:
    the expert's sources join the caller's numbering."""
    content = delegation_result(child=child)
    if child.status != RunStatus.SUCCEEDED or not child.citations:
        return content
    # The expert's sources join this run's numbering, so this run's answer can cite them.
    mapping = references_from_child(run, child)
    body = json.loads(content)
    body["result"]["answer"] = renumber(body["result"]["answer"], mapping)
    body["result"]["citations"] = [
        {"ref": mapping[c["ref"]], "title": c["title"], "quote": c["quote"]}
        | ({"url": c["url"]} if c.get("url") else {})
        for c in child.citations
    ]
    return json.dumps(body, ensure_ascii=False)


def save_progress(run: Run, emitter: RunEmitter) -> None:
    """Save the run's progress with the last event number sent (fenced by its lease)."""
    run.last_seq = emitter.seq
    run_save_progress(run=run)
