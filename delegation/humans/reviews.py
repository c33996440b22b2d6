"""The review queue: a turn whose answer needs review is queued with its question, issues and
citations; a reviewer marks it correct, wrong, or fixed (the corrected answer is sent to the
user's chat as a follow-up from "Reviewer")."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import pgettext_lazy

from chat.events import emit, envelope
from chat.models import ChatSession, MessageRole, MessageStatus
from chat.services import message_upsert
from config.db.prepared import PreparedLookup
from config.errors import AppError
from delegation.humans.activity import activity_record
from delegation.humans.fallback import RESTARTS
from delegation.humans.inputs import input_invalid, input_text
from delegation.humans.models import ActivityKind, Review, ReviewStatus
from delegation.humans.validation import is_low
from delegation.models import Run
from delegation.runs.emitter import RunEmitter
from delegation.runs.transcript import asked_an_expert

QUALITY_TAG = {
    "kind": "reviewer",
    "name": "quality",
    "display_name": "Quality check",
    "depth": 0,
    "path": [],
}
# A review's status as "This answer was already marked …" says it (English: the status itself).
STATUS_WORDS: dict[str, Promise] = {
    ReviewStatus.PENDING: pgettext_lazy("review status", "pending"),
    ReviewStatus.CORRECT: pgettext_lazy("review status", "correct"),
    ReviewStatus.WRONG: pgettext_lazy("review status", "wrong"),
    ReviewStatus.FIXED: pgettext_lazy("review status", "fixed"),
}
REVIEWER_TAG = {
    "kind": "reviewer",
    "name": "reviewer",
    "display_name": "Reviewer",
    "depth": 0,
    "path": [],
}


# The checked experts' runs of a turn: compiled once per connection.
_CHECKED_BELOW = PreparedLookup(
    lambda root: Run.objects.filter(root_id=root, validation__isnull=False).only(
        "validation", "agent_config", "status"
    ),
    keys=[Run._meta.pk],
)


def turn_checks(*, run: Run) -> list[tuple[str, dict[str, Any]]]:
    """The checks the entry agent's answer relies on, as (agent name, check): its own and its
    experts' (not those of an answer a fallback attempt replaced)."""
    checks = [(run.agent_config["name"], run.validation)] if run.validation else []
    # (Each expert's check is counted on the root before the expert ends, so before the root
    # is resumed and read.)
    below = run.tree_checks and asked_an_expert(run)
    for expert in _CHECKED_BELOW.rows(run.id) if below else ():
        if (expert.validation or {}).get("outcome") not in RESTARTS:
            checks.append((expert.agent_config["name"], expert.validation))
    return checks


def turn_assess(
    *,
    run: Run,
    emitter: RunEmitter,
    message_id: uuid.UUID,
    answer: str,
    checks: list[tuple[str, dict[str, Any]]] | None = None,
) -> None:
    """Rate the turn's answer from the checks of the answers it relies on (`checks`, read
    now when not given): `high`, `low` (a check failed or was unsure: the answer is queued
    for review and the user told), or "" when nothing was checked. Sets `run.confidence` and
    `run.needs_review`."""
    if checks is None:
        checks = turn_checks(run=run)
    if not checks:
        return
    low = [(name, check) for name, check in checks if is_low(check)]
    run.confidence = "low" if low else "high"
    run.needs_review = bool(low)
    issues = [f"{name}: {check.get('issue') or 'low confidence'}" for name, check in low]
    review = _review_create(run, message_id, answer, low, issues) if low else None
    emitter.emit(
        "message.assessed",
        message_id,
        confidence=run.confidence,
        needs_review=run.needs_review,
        issues=issues,
        review_id=str(review.id) if review else None,
    )
    if review is not None:
        _note(
            run,
            "Low confidence: this answer relies on an answer that could not be "
            f"verified ({'; '.join(issues)}). A reviewer will check it; a correction, if "
            "needed, will appear here.",
        )


def _review_create(
    run: Run, message_id: uuid.UUID, answer: str, low: list, issues: list[str]
) -> Review:
    """The queue entry (once per turn, so a redelivered step adds none)."""
    flagged = low[0][0]
    group = run.agent_config.get("human_group", "")
    for expert in Run.objects.filter(root_id=run.id, agent_config__name=flagged)[:1]:
        group = expert.agent_config.get("human_group", "") or group
    review, _created = Review.objects.get_or_create(
        run=run,
        defaults={
            "session_id": run.session_id,
            "user_id": run.user_id,
            "message_id": message_id,
            "agent_name": flagged,
            "group": group,
            "question": run.task,
            "answer": answer,
            "issue": "\n".join(issues),
            "citations": run.citations or [],
        },
    )
    return review


def _note(run: Run, text: str) -> None:
    """A short message in the chat from the quality check (saved, so a replay shows it)."""
    _message(run, uuid.uuid5(run.id, "quality-note"), QUALITY_TAG, text)


def _message(run: Run, message_id: uuid.UUID, tag: dict[str, Any], text: str) -> None:
    message_upsert(
        message_id=message_id,
        session_id=run.session_id,
        role=MessageRole.AGENT,
        run_id=run.id,
        agent=tag,
        status=MessageStatus.COMPLETED,
        content=text,
    )
    for type, data in (
        ("message.started", {"model": ""}),
        (
            "message.completed",
            {"text": text, "status": "completed", "usage": {}, "model": "", "citations": []},
        ),
    ):
        emit(
            envelope(
                type,
                session_id=run.session_id,
                run_id=run.id,
                message_id=message_id,
                agent=tag,
                data=data,
            )
        )


def review_decide(
    *, review: Review, user: Any, status: str, note: str = "", corrected_answer: str = ""
) -> Review:
    """Mark a review correct, wrong (with a note) or fixed (with the corrected answer, sent to
    the user's chat from "Reviewer"); the first review wins, a later one is `already_decided`."""
    limit = settings.CHAT_MAX_MESSAGE_CHARS
    note = input_text(note, field="note", limit=limit)
    corrected = input_text(corrected_answer, field="corrected_answer", limit=limit)
    if status not in (ReviewStatus.CORRECT, ReviewStatus.WRONG, ReviewStatus.FIXED):
        raise input_invalid("status", _("Mark the answer correct, wrong or fixed."))
    if status == ReviewStatus.WRONG and not note.strip():
        raise input_invalid("note", _("Say what is wrong."))
    if status == ReviewStatus.FIXED and not corrected.strip():
        raise input_invalid("corrected_answer", _("Give the corrected answer to send to the user."))
    followup = uuid.uuid5(review.id, "followup") if status == ReviewStatus.FIXED else None
    with transaction.atomic():
        updated = Review.objects.filter(pk=review.pk, status=ReviewStatus.PENDING).update(
            status=status,
            note=note.strip(),
            corrected_answer=corrected.strip(),
            reviewed_by=user,
            reviewed_at=timezone.now(),
            followup_message_id=followup,
        )
        review.refresh_from_db()
        if not updated:
            raise AppError(
                "already_decided",
                _("This answer was already marked %(status)s.")
                % {"status": STATUS_WORDS.get(review.status, review.status)},
                details={"status": review.status},
                status=409,
            )
        run = review.run
        if followup is not None:
            _message(run, followup, REVIEWER_TAG, review.corrected_answer)
            ChatSession.objects.filter(pk=review.session_id).update(updated_at=timezone.now())
        activity_record(
            kind=ActivityKind.REVIEW_DECIDED,
            run=run,
            agent_name=review.agent_name,
            actor=user,
            summary=f"Review of {review.agent_name}'s answer: {status}"
            + (f" ({review.note})" if review.note else ""),
            data={"review_id": str(review.id), "status": status},
            group=review.group,
        )
    return review
