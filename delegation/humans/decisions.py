"""Decisions on inbox items: the first one wins, and it resumes only the run that asked.

A decision, an expiry or the user's cancel is a conditional UPDATE of a pending item (a later
one changes nothing and is told `already_decided`), then, under the run's row lock, the run is
re-enqueued if nothing else is left to wait for, exactly like the last child of a delegation.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy

from chat.models import ChatMessage, MessageStatus
from config.errors import AppError
from delegation.humans.activity import activity_record
from delegation.humans.inputs import input_invalid, input_text
from delegation.humans.models import (
    ActivityKind,
    Audience,
    Decision,
    InboxItem,
    ItemKind,
    ItemStatus,
)
from delegation.humans.notify import inbox_notify, session_notify
from delegation.humans.selectors import human_info, may_decide
from delegation.models import FINAL_STATUSES, Run
from delegation.runs.ending import subtree_ids
from delegation.runs.waits import run_resume_if_ready
from delegation.steps.prompting import effective_tools

BATCH = 200

# An item's status as "This request was already …" says it (in English, the status itself).
STATUS_WORDS: dict[str, Promise] = {
    ItemStatus.PENDING: pgettext_lazy("request status", "pending"),
    ItemStatus.ANSWERED: pgettext_lazy("request status", "answered"),
    ItemStatus.APPROVED: pgettext_lazy("request status", "approved"),
    ItemStatus.MODIFIED: pgettext_lazy("request status", "modified"),
    ItemStatus.REJECTED: pgettext_lazy("request status", "rejected"),
    ItemStatus.EXPIRED: pgettext_lazy("request status", "expired"),
    ItemStatus.CANCELLED: pgettext_lazy("request status", "cancelled"),
}


def item_decide(
    *,
    item: InboxItem,
    user: Any,
    decision: str,
    answer: str = "",
    note: str = "",
    arguments: Any = None,
) -> InboxItem:
    """Record a person's decision (approve with an `answer` for a question; approve, modify
    with `arguments`, or reject for a tool call) and resume the run. AppError `invalid` for a
    decision that does not fit the item, `already_decided` (409) when one came first."""
    if not may_decide(user, item):
        raise AppError(
            "permission_denied",
            _("Only staff may decide this request.")
            if item.audience == Audience.STAFF
            else _("Only the user asked may answer."),
            status=403,
        )
    fields = _decision_fields(item, decision, answer, note, arguments)
    fields.update(decision=decision, decided_by=user, decided_at=timezone.now())
    return _close(item, fields, actor=user, kind=_decided_kind(item))


def item_decide_unattended(
    *, item: InboxItem, decision: str, answer: str = "", note: str = ""
) -> InboxItem:
    """Decide an item with no person (an eval case decides its own turn's items by what the
    case says), by the same rules and with the same exactly-once resume as `item_decide`."""
    fields = _decision_fields(item, decision, answer, note, None)
    fields.update(decision=decision, decided_at=timezone.now())
    return _close(item, fields, actor=None, kind=_decided_kind(item))


def item_cancel(*, item: InboxItem, user: Any) -> InboxItem:
    """The end user stops waiting: the run goes on without an answer (a gated tool does not
    run). Only the user the run acts for may cancel."""
    if item.user_id != user.pk:
        message = _("Only the user the agent works for may cancel.")
        raise AppError("permission_denied", message, status=403)
    fields = {"status": ItemStatus.CANCELLED, "decided_by": user, "decided_at": timezone.now()}
    return _close(item, fields, actor=user, kind=ActivityKind.WAIT_CANCELLED)


def items_expire() -> int:
    """Items past their deadline expire (their runs go on with "no answer from a human");
    pending items of runs that ended (a stopped turn) are closed as cancelled."""
    done = 0
    expired = InboxItem.objects.filter(status=ItemStatus.PENDING, deadline__lt=timezone.now())
    for item in expired[:BATCH]:
        try:
            _close(item, {"status": ItemStatus.EXPIRED}, actor=None, kind=ActivityKind.WAIT_EXPIRED)
            done += 1
        except AppError:
            continue  # decided meanwhile
    items_close_ended()
    return done


def items_close_ended(*, run_ids: list[Any] | None = None) -> int:
    """Close as cancelled the pending items of runs that ended (a stopped turn), so staff stop
    seeing them and the chat stops offering them; `run_ids` limits it to those runs."""
    orphaned = InboxItem.objects.filter(status=ItemStatus.PENDING, run__status__in=FINAL_STATUSES)
    if run_ids is not None:
        orphaned = orphaned.filter(run_id__in=run_ids)
    closed = 0
    for item in orphaned.select_related("run", "user")[:BATCH]:
        if InboxItem.objects.filter(pk=item.pk, status=ItemStatus.PENDING).update(
            status=ItemStatus.CANCELLED, decided_at=timezone.now()
        ):
            item.refresh_from_db()
            _message_closed(item)
            inbox_notify(item, "inbox.item_decided")  # staff pages drop it
            closed += 1
    return closed


def items_close_stopped(*, run: Run) -> int:
    """After a stop: close the pending items of the run and every run below it."""
    return items_close_ended(run_ids=subtree_ids(run=run))


def _message_closed(item: InboxItem) -> None:
    """The call's tool message says the wait ended with its run (a reload shows no question)."""
    message = ChatMessage.objects.filter(pk=item.message_id).first()
    if message is not None and message.tool:
        message.tool = {**message.tool, "human": human_info(item)}
        message.status = MessageStatus.CANCELLED
        message.save(update_fields=["tool", "status", "updated_at"])


def _close(item: InboxItem, fields: dict[str, Any], *, actor: Any, kind: str) -> InboxItem:
    with transaction.atomic():
        # The run's row first (as every resume does), then the item: no lock-order deadlock.
        run = Run.objects.select_for_update().get(pk=item.run_id)
        if run.status in FINAL_STATUSES:  # the turn was stopped: nothing waits any more
            fields = {"status": ItemStatus.CANCELLED, "decided_at": timezone.now()}
        updated = InboxItem.objects.filter(pk=item.pk, status=ItemStatus.PENDING).update(**fields)
        item.refresh_from_db()
        if updated and run.status not in FINAL_STATUSES:
            activity_record(
                kind=kind,
                run=run,
                actor=actor,
                summary=_summary(item),
                data={"item_id": str(item.id), "status": item.status, "note": item.note},
                group=item.group,
                audience=item.audience,
            )
            inbox_notify(item, "inbox.item_decided")
            session_notify(item, "run.resumed")
            run_resume_if_ready(run_id=item.run_id)
            return item
    if updated:  # closed because the run had ended
        _message_closed(item)
        inbox_notify(item, "inbox.item_decided")
        raise AppError(
            "already_decided",
            _("The agent no longer waits for this request (its turn ended)."),
            details={"status": item.status},
            status=409,
        )
    status = STATUS_WORDS.get(item.status, item.status)
    message = (
        _("This request was already %(status)s by %(user)s.")
        % {"status": status, "user": item.decided_by.get_username()}
        if item.decided_by_id
        else _("This request was already %(status)s.") % {"status": status}
    )
    raise AppError(
        "already_decided",
        message,
        details={"status": item.status},
        status=409,
    )


def _decision_fields(
    item: InboxItem, decision: str, answer: str, note: str, arguments: Any
) -> dict[str, Any]:
    """The item's new fields for a decision; AppError `invalid` naming what does not fit."""
    if decision not in Decision.values:
        raise input_invalid("decision", _("Decide approve, modify or reject."))
    limit = settings.HUMANS_ANSWER_MAX_CHARS
    answer = input_text(answer, field="answer", limit=limit)
    note = input_text(note, field="note", limit=limit)
    if decision == Decision.REJECT:
        return {"status": ItemStatus.REJECTED, "note": note}
    if item.kind == ItemKind.QUESTION:
        if decision == Decision.MODIFY:
            raise input_invalid("decision", _("A question is answered with approve and an answer."))
        if not answer.strip():
            raise input_invalid("answer", _("Give the answer to the question."))
        if arguments is not None:
            raise input_invalid("arguments", _("A question takes an answer, not arguments."))
        return {"status": ItemStatus.ANSWERED, "answer": answer.strip(), "note": note}
    if answer:
        raise input_invalid("answer", _("A tool approval takes no answer; use note for a remark."))
    if decision == Decision.APPROVE:
        if arguments is not None:
            raise input_invalid("arguments", _("To change the arguments, decide modify."))
        return {"status": ItemStatus.APPROVED, "note": note, "final_arguments": item.arguments}
    if not isinstance(arguments, dict):
        raise input_invalid("arguments", _("modify needs the tool's new arguments as an object."))
    registered = effective_tools(item.run).get(item.tool)
    if registered is not None:
        problems = sorted(registered.validator.iter_errors(arguments), key=lambda e: list(e.path))
        if problems:
            text = "; ".join(
                f"{'/'.join(map(str, p.path)) or '(arguments)'}: {p.message}" for p in problems[:5]
            )
            # The schema's reasons (jsonschema's sentences) stay English.
            message = _("The arguments do not fit %(tool)s: %(problems)s")
            raise input_invalid("arguments", message % {"tool": item.tool, "problems": text})
    return {"status": ItemStatus.MODIFIED, "note": note, "final_arguments": arguments}


def _decided_kind(item: InboxItem) -> str:
    if item.kind == ItemKind.QUESTION:
        return ActivityKind.ESCALATION_DECIDED
    return ActivityKind.APPROVAL_DECIDED


def _summary(item: InboxItem) -> str:
    who = item.decided_by.get_username() if item.decided_by_id else "nobody"
    what = item.tool or f"“{item.question[:120]}”"
    audience = "the user" if item.audience == Audience.USER else "staff"
    return f"{what} ({item.agent_display_name}, asked of {audience}): {item.status} by {who}"
