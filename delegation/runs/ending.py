"""Ending runs, the one way: record the outcome, close open messages, tell the user plainly,
stop what runs below, report to the caller. Nothing of a run is emitted after its end."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext_lazy

from chat.models import ChatMessage, MessageRole, MessageStatus
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.runs.claim import HandOver
from delegation.runs.emitter import RunEmitter
from delegation.runs.ended import run_mark_ended
from delegation.runs.hooks import HOOKS, turn_completed_data
from delegation.runs.transcript import awaits_an_expert
from delegation.runs.writes import run_finish, run_finish_elsewhere

logger = logging.getLogger(__name__)

# What the user reads for each failure code; the raw detail stays in the run and the logs.
# (Translated when a run ends, in the run's language.)
PLAIN_FAILURES = {
    "model_timeout": gettext_lazy("the model took too long to answer."),
    "model_rate_limited": gettext_lazy(
        "the model service is busy right now. Please try again in a moment."
    ),
    "model_auth": gettext_lazy(
        "the model service is not set up correctly. Please tell an administrator."
    ),
    "model_misconfigured": gettext_lazy(
        "the model service is not set up correctly. Please tell an administrator."
    ),
    "model_unavailable": gettext_lazy(
        "the model service is unavailable right now. Please try again later."
    ),
    "model_error": gettext_lazy(
        "the model service sent an answer I could not use. Please try again."
    ),
    "run_timeout": gettext_lazy("it took longer than the time limit."),
    "budget_exhausted": gettext_lazy("the question needed more work than one turn may do."),
    "budget_exceeded": gettext_lazy(
        "it would cost more than the spending limit allows. Please try a smaller question, or "
        "ask an administrator about the limit."
    ),
    "internal_error": gettext_lazy("something went wrong on our side."),
    "wait_cycle": gettext_lazy("the work waited on itself (a cycle), so the wait was stopped."),
}
FAILURE_OPENINGS = {
    RunStatus.TIMED_OUT: gettext_lazy("Sorry, I could not finish in time: %(reason)s"),
    RunStatus.FAILED: gettext_lazy("Sorry, I could not finish this: %(reason)s"),
}


def failure_message_id(run: Run) -> uuid.UUID:
    """The id of the plain-language failure note of a run."""
    return uuid.uuid5(run.id, "failure")


def run_failure(code: str, detail: str) -> dict[str, str]:
    """A run's error: its code, the plain sentence users read (in the active language; run_end
    says it again in the run's), and the raw detail for admins."""
    return {"code": code, "message": _plain(code), "detail": detail}


def _plain(code: str) -> str:
    plain = str(PLAIN_FAILURES.get(code, PLAIN_FAILURES["internal_error"]))
    return plain[0].upper() + plain[1:]


def run_end(
    *,
    run: Run,
    emitter: RunEmitter,
    status: str,
    answer: str = "",
    error: dict[str, str] | None = None,
    hand_over: HandOver | None = None,
) -> bool:
    """End the run by its own worker (fenced by its lease), once: record the outcome, close
    its open messages, tell the user plainly, stop what runs below, report to its caller
    (`hand_over`: the task body that may run the caller next). False if it had already ended
    or is no longer this worker's."""
    error = _in_its_language(run, error)
    run.last_seq = emitter.seq
    if not run_finish(run=run, status=status, answer=answer, error=error):
        return False
    _after_end(run, status, error, emitter, hand_over)
    return True


def run_end_elsewhere(*, run: Run, status: str, error: dict[str, str] | None = None) -> bool:
    """End the run from outside its worker (a stop, the sweeper, a watchdog), once, as
    `run_end` does; its events continue past any number its worker may have sent and not
    saved. False if it had already ended."""
    error = _in_its_language(run, error)
    emitter = RunEmitter(run, foreign=True)
    run.last_seq = emitter.seq
    if not run_finish_elsewhere(run=run, status=status, error=error):
        return False
    with translation.override(run.language or None):
        _after_end(run, status, error, emitter, None)
    return True


def _in_its_language(run: Run, error: dict[str, str] | None) -> dict[str, str] | None:
    """The error with its plain sentence in the run's language (a stop or the sweeper runs
    outside the run's own language)."""
    if not error:
        return error
    with translation.override(run.language or None):
        return {**error, "message": _plain(error["code"])}


def run_answer_ended(*, run: Run, emitter: RunEmitter) -> None:
    """The rest of the end of a turn's entry run whose answering step already saved it as
    succeeded (the step's own commit ran `run_finish`): close, tell, route. (An expert's is
    reported to its caller in that commit: delegation.tree.report.run_answer_reported.)"""
    _after_end(run, RunStatus.SUCCEEDED, None, emitter, None)


def _after_end(
    run: Run,
    status: str,
    error: dict[str, str] | None,
    emitter: RunEmitter,
    hand_over: HandOver | None,
) -> None:
    """What follows a run's recorded end: nothing of it is emitted after this."""
    run_mark_ended(run.id)
    emitter.closing = True
    _close_open_messages(run, emitter, status)
    # A call gets its result only once its last child ended, and the model is asked again only
    # when every call has its result: only an unanswered delegate call can have experts working.
    if emitter.foreign or awaits_an_expert(run):
        for child in run.children.exclude(status__in=FINAL_STATUSES):
            run_stop(run=child)
    if error:
        emitter.emit("error", code=error["code"], message=error["message"])
        _failure_note(run, emitter, status, error)
    if run.parent_id is None and status == RunStatus.SUCCEEDED:
        for succeeded in HOOKS.turn_succeeded:  # (routing's memory: before the turn is done)
            succeeded(run)
    extra = turn_completed_data(run) if run.parent_id is None else {}
    emitter.emit("run.completed", status=status, usage=run.usage, error=_public(error), **extra)
    if run.parent_id:
        HOOKS.report(run, hand_over)  # (delegation.tree.report)
    else:
        for ended in HOOKS.turn_ended:  # (channels: the answer to the channel it came from)
            ended(run)


def run_stop(*, run: Run) -> bool:
    """Cancel a run and everything below it; a stopped expert's caller goes on without it.
    Lock order: the caller first (the stopped expert reports to it in this transaction), then
    the subtree by depth, as every transaction that locks two runs of a tree does."""
    with transaction.atomic():
        if run.parent_id is not None:
            Run.objects.select_for_update().filter(pk=run.parent_id).values_list("pk").first()
        ids = subtree_ids(run=run)
        active = list(
            Run.objects.select_for_update()
            .filter(pk__in=ids)
            .exclude(status__in=FINAL_STATUSES)
            .order_by("depth")
        )
        if not active:
            return False
        for stopped in active:
            run_end_elsewhere(run=stopped, status=RunStatus.CANCELLED)
    return True


def subtree_ids(*, run: Run) -> list[uuid.UUID]:
    """The run and every run below it."""
    ids, frontier = [run.id], [run.id]
    while frontier:
        frontier = list(Run.objects.filter(parent_id__in=frontier).values_list("id", flat=True))
        ids.extend(frontier)
    return ids


def _close_open_messages(run: Run, emitter: RunEmitter, status: str) -> None:
    """Every message of the run still streaming gets its final status and text, once (the
    run's own worker knows which it left open; anyone else looks)."""
    if not emitter.foreign and not emitter.streaming:
        return
    final = MessageStatus.CANCELLED if status == RunStatus.CANCELLED else MessageStatus.FAILED
    if status == RunStatus.SUCCEEDED:
        final = MessageStatus.COMPLETED
    open_messages = ChatMessage.objects.filter(
        run_id=run.id, role=MessageRole.AGENT, status=MessageStatus.STREAMING
    )
    for message in open_messages:
        updated = ChatMessage.objects.filter(pk=message.pk, status=MessageStatus.STREAMING).update(
            status=final
        )
        if updated:
            emitter.emit(
                "message.completed",
                message.id,
                text=message.content,
                status=final,
                usage={},
                model=message.model,
            )


def _failure_note(run: Run, emitter: RunEmitter, status: str, error: dict[str, str]) -> None:
    """A plain sentence in the chat saying the run failed and why (never raw upstream text)."""
    opening = FAILURE_OPENINGS.get(status, FAILURE_OPENINGS[RunStatus.FAILED])
    plain = PLAIN_FAILURES.get(error["code"])
    text = opening % {"reason": plain if plain is not None else error["message"]}
    message_id = failure_message_id(run)
    ChatMessage.objects.update_or_create(
        id=message_id,
        defaults={
            "session_id": run.session_id,
            "role": MessageRole.AGENT,
            "run_id": run.id,
            "agent": emitter.tag,
            "content": text,
            "status": MessageStatus.FAILED,
        },
    )
    emitter.emit("message.started", message_id, model="")
    emitter.emit(
        "message.completed", message_id, text=text, status=MessageStatus.FAILED, usage={}, model=""
    )
    if error.get("detail"):
        logger.warning("run %s %s: %s", run.id, error["code"], error["detail"])


def _public(error: dict[str, str] | None) -> dict[str, str] | None:
    """The error as clients see it: code and plain message, never the raw upstream detail."""
    return None if error is None else {"code": error["code"], "message": error["message"]}
