"""Ending a run: record the outcome, tell the user plainly on failure, report to the caller."""

from __future__ import annotations

from chat.models import MessageStatus
from delegation.emitter import RunEmitter
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.services import run_finish
from delegation.streaming import MessageStream
from delegation.tree import delegation_complete, run_stop

FAILURE_SENTENCES = {
    RunStatus.TIMED_OUT: "I could not finish in time",
    RunStatus.FAILED: "I could not finish this",
}


def failure_message_id(run: Run) -> object:
    """The id of the plain-language failure note of a run."""
    import uuid

    return uuid.uuid5(run.id, "failure")


def _delegated(run: Run) -> bool:
    """Whether the run ever called the delegate tool (else it has no children to stop)."""
    return any(
        call["function"]["name"] == "delegate"
        for message in run.transcript
        for call in message.get("tool_calls") or []
    )


def run_end(
    *,
    run: Run,
    status: str,
    answer: str = "",
    error: dict[str, str] | None = None,
    emitter: RunEmitter | None = None,
    fenced: bool = True,
) -> bool:
    """Finish the run once; on failure add an `error` event and a plain note; stop anything
    still running below it; report to its caller. False if it had already ended."""
    emitter = emitter or RunEmitter(run)
    run.last_seq = emitter.seq
    if not run_finish(run=run, status=status, answer=answer, error=error, fenced=fenced):
        return False
    if _delegated(run):
        for child in run.children.exclude(status__in=FINAL_STATUSES):
            run_stop(run=child)
    if error:
        emitter.emit("error", code=error["code"], message=error["message"])
        sentence = f"Sorry, {FAILURE_SENTENCES.get(status, 'I could not finish this')}: "
        note = MessageStream(emitter, failure_message_id(run), "", fenced=False)
        note.text = sentence + error["message"]
        note.complete(usage={}, status=MessageStatus.FAILED)
    emitter.emit("run.completed", status=status, usage=run.usage, error=error)
    if run.parent_id:
        delegation_complete(child=run)
    return True
