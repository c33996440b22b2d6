"""Reporting an expert's end to its caller: the result its model reads, its message, resumption."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from django.db import transaction
from django.db.models import Exists, JSONField, OuterRef, QuerySet, Subquery
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chat.events import emit, envelope
from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from config.db.prepared import PreparedLookup
from delegation.models import Run, RunStatus
from delegation.runs.claim import HandOver, with_what_steps_use
from delegation.runs.emitter import RunEmitter, agent_tag
from delegation.runs.hooks import HOOKS
from delegation.runs.waits import Waits, run_resume_if_ready, waits_of, with_waits
from delegation.tree.labels import ended as ended_label
from delegation.tree.labels import expert_name, spoken

FAILURE_WORDS = {  # (code, the sentence with and without the expert's own reason)
    RunStatus.FAILED: (
        "delegation_failed",
        gettext_lazy("I asked the %(name)s but it could not finish: %(reason)s"),
        gettext_lazy("I asked the %(name)s but it could not finish."),
    ),
    RunStatus.TIMED_OUT: (
        "delegation_timed_out",
        gettext_lazy("I asked the %(name)s but it did not answer in time: %(reason)s"),
        gettext_lazy("I asked the %(name)s but it did not answer in time."),
    ),
    RunStatus.CANCELLED: (
        "delegation_cancelled",
        gettext_lazy("The %(name)s was stopped before it answered: %(reason)s"),
        gettext_lazy("The %(name)s was stopped before it answered."),
    ),
}


def delegation_result(*, child: Run) -> str:
    """The tool result content a finished child gives its caller's model: its answer (as the
    check of it has it said, when its answers are checked: the `checked_result` hook), or a
    failure as a structured error."""
    name = expert_name(child.agent_config, child.language)  # as the user reads it
    if child.status == RunStatus.SUCCEEDED:
        body: dict[str, Any] = {"ok": True, "result": {"agent": name, "answer": child.answer}}
        if child.validation:
            body = HOOKS.checked_result(child, body)
    else:
        code, with_reason, bare = FAILURE_WORDS.get(child.status, FAILURE_WORDS[RunStatus.FAILED])
        reason = (child.error or {}).get("message", "")
        words = (with_reason if reason else bare) % {"name": name, "reason": reason}
        body = {"ok": False, "status": child.status, "error": {"code": code, "message": words}}
    return json.dumps(body, ensure_ascii=False)


def _superseded_result(child: Run) -> dict[str, Any]:
    """What the caller's delegation message says of an answer replaced by a new attempt."""
    check = child.validation or {}
    if check.get("outcome") == "retry":
        words = _("The answer was judged invalid (%(issue)s); asking again.")
    else:
        words = _("The answer was judged invalid (%(issue)s); asking another expert.")
    return {
        "ok": False,
        "status": "invalid",
        "error": {"code": "answer_invalid", "message": words % {"issue": check.get("issue")}},
    }


def _caller_with_message(caller_id: Any, child_key: Any, child_id: Any) -> QuerySet[Run]:
    """The caller, locked, with what its steps use (the last expert's end hands it over to
    its own worker, whose claim then reads nothing), in one statement with what it still
    waits for besides this expert (`with_waits`: its end may be saved after this read, in the
    same transaction) and its message of the delegation, found by the expert's run (a
    reattempt is a message of its own): `delegation_message_id` and `delegation_tool`, None
    when the message is gone."""
    message = ChatMessage.objects.filter(
        run_id=OuterRef("pk"), role=MessageRole.TOOL, tool__delegation__run_id=child_key
    ).order_by("created_at", "pk")
    return with_waits(
        with_what_steps_use(Run.objects.select_for_update(of=("self",)).filter(pk=caller_id)),
        besides=child_id,
    ).annotate(
        delegation_message_id=Subquery(message.values("pk")[:1]),
        delegation_tool=Subquery(message.values("tool")[:1], output_field=JSONField()),
    )


def _caller_of_held(caller_id: Any, child_key: Any, child_id: Any, token: Any) -> QuerySet[Run]:
    """`_caller_with_message`, found (and locked) only while the expert is still running under
    its worker's lease `token`."""
    held = Run.objects.filter(pk=child_id, status=RunStatus.RUNNING, lease_token=token)
    return _caller_with_message(caller_id, child_key, child_id).filter(Exists(held))


# Compiled once per connection: a child's end is reported in one read.
_CALLER = PreparedLookup(
    _caller_with_message,
    keys=[Run._meta.pk, ChatMessage._meta.get_field("tool"), Run._meta.pk],
)


_CALLER_OF_HELD = PreparedLookup(
    _caller_of_held,
    keys=[*_CALLER.keys, Run._meta.get_field("lease_token")],
)


@dataclass(frozen=True)
class Caller:
    """The run an expert reports its end to, read locked with what it still waits for besides
    that expert, and its message of the delegation (`message_id` and `tool`: None when the
    message is gone)."""

    run: Run
    waits: Waits
    message_id: uuid.UUID | None
    tool: dict[str, Any] | None


def delegation_caller(*, child: Run) -> Caller | None:
    """The caller `child` reports its end to, locked, as `delegation_complete` reads it (None
    when it is gone)."""
    return _caller(_CALLER.row(child.parent_id, str(child.id), child.id))


def delegation_caller_held(*, child: Run) -> Caller | None:
    """`delegation_caller`, read first by an expert whose answering step reports in its own
    commit, so that its caller's row is locked before its own, as a stop locks them; None also
    when the expert is no longer its worker's (ended by a stop or the sweeper), so that its
    doomed commit locks nothing: its caller may be running a step of its own by then, which
    locks the spend counters before its own row."""
    row = _CALLER_OF_HELD.row(child.parent_id, str(child.id), child.id, child.lease_token)
    return _caller(row)


def _caller(row: Run | None) -> Caller | None:
    if row is None:
        return None
    return Caller(row, waits_of(row), row.delegation_message_id, row.delegation_tool)


def _report_message(
    caller: Caller, tag: dict[str, Any], result: dict[str, Any], status: str
) -> uuid.UUID | None:
    """Write the caller's message of the delegation with the expert's result: by id, whole,
    with what an ask wrote (`_save_message`, or a reattempt's `delegation_reattempt`), so the
    upsert changes only its tool, status and time. Its id (None: the message is gone)."""
    if caller.message_id is None or caller.tool is None:
        return None
    tool = caller.tool
    # A stopped caller's call stays "cancelled": the page marks the turn stopped by it.
    stopped = caller.run.status == RunStatus.CANCELLED
    message_upsert(
        message_id=caller.message_id,
        session_id=caller.run.session_id,
        role=MessageRole.TOOL,
        run_id=caller.run.id,
        agent=tag,
        status=MessageStatus.CANCELLED if stopped else MessageStatus.COMPLETED,
        tool={**tool, **result, "delegation": {**tool.get("delegation", {}), "status": status}},
    )
    return caller.message_id


_UNREAD: Any = object()


def delegation_complete(
    *,
    child: Run,
    caller: Caller | None = _UNREAD,
    hand_over: HandOver | None = None,
) -> None:
    """Report a child's end to its caller; the last child to end resumes the caller (handed
    over to `hand_over`'s task body when it may run it next). An answer replaced by a fallback
    attempt is reported `invalid`, and the caller keeps waiting for the new attempt. In the
    child's own commit when it gives `caller`, read locked by `delegation_caller_held` in that
    transaction."""
    with transaction.atomic(savepoint=False):  # (in the child's answering commit, or its own)
        found = delegation_caller(child=child) if caller is _UNREAD else caller
        if found is None:
            return
        parent = found.run
        superseded = (child.validation or {}).get("outcome") in ("retry", "next_expert")
        with spoken(parent):  # (a sweeper or a stop reports outside the turn's step)
            if superseded:
                result, status = _superseded_result(child), "invalid"
            else:
                result, status = json.loads(delegation_result(child=child)), child.status
            summary = ended_label(expert_name(child.agent_config, parent.language), status)
        answer = child.answer[:300] if result["ok"] else result["error"]["message"]
        tag = agent_tag(parent)
        message_id = _report_message(found, tag, {**result, "summary": summary}, status)
        emit(
            envelope(
                "delegation.completed",
                session_id=parent.session_id,
                run_id=parent.id,
                message_id=message_id,
                agent=tag,
                data={
                    "call_id": child.parent_tool_call_id,
                    "run_id": str(child.id),
                    "status": status,
                    "summary": summary,
                    "answer": answer,
                    "error": None if result["ok"] else result["error"],
                    "usage": child.usage,
                },
            )
        )
        ok = result["ok"] and child.status == RunStatus.SUCCEEDED
        HOOKS.activity(
            kind="delegation_answered" if ok else "delegation_failed",
            run=child,
            summary=f"{child.agent_config['display_name']} → "
            f"{parent.agent_config['display_name']}: {status}: {answer[:300]}",
            data={"status": status, "caller_run_id": str(parent.id)},
        )
        # A caller handed over takes this result from here (a superseded answer gives none).
        ended = {} if superseded else {child.parent_tool_call_id: child}
        run_resume_if_ready(
            run_id=parent.pk,
            locked=parent,
            waits=found.waits,
            hand_over=hand_over,
            experts_ended=MappingProxyType(ended),
        )


def run_answer_reported(
    *, run: Run, emitter: RunEmitter, caller: Caller | None, hand_over: HandOver | None
) -> None:
    """Within the commit of an expert's answering step that saved its end: say it ended and
    report to its caller (read locked before its end was saved, `delegation_caller_held`), so
    an expert's answer, its end and its caller's resumption are one commit. Nothing else of an
    end applies to it: its messages are complete, it has no expert working, it is not a turn
    to route. The step marks it ended once committed (`run_mark_ended`)."""
    emitter.closing = True
    emitter.emit("run.completed", status=RunStatus.SUCCEEDED, usage=run.usage, error=None)
    delegation_complete(child=run, caller=caller, hand_over=hand_over)


def run_report(run: Run, hand_over: HandOver | None) -> None:
    """The engine's report hook: an ended run with a caller reports to it (`run_end`)."""
    delegation_complete(child=run, hand_over=hand_over)
