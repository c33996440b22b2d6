"""A scheduled run's answer by mail, for schedules that ask for it: the run is noted when it
starts, and when its turn ends the answer is mailed to the user once."""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.core.cache import cache
from django.core.mail import EmailMessage

from chat.channels.delivery import answer_pieces
from config.enqueue import enqueue
from delegation.models import Run, RunStatus

logger = logging.getLogger(__name__)

NOTED_KEY = "scheduled-mail:{}"  # a scheduled turn whose answer is mailed (cache, like channels')
SENT_KEY = "scheduled-mailed:{}"  # mailed already: a repeated end or task mails nothing
KEEP_SECONDS = 24 * 3600


def scheduled_mail_expect(run_id: uuid.UUID) -> None:
    """Remember that this scheduled turn's answer is mailed when it ends."""
    try:
        cache.set(NOTED_KEY.format(run_id), 1, KEEP_SECONDS)
    except Exception as exc:  # noqa: BLE001 (any cache error: the answer stays in the chat)
        logger.warning("could not note scheduled mail of %s (%s)", run_id, exc)


def scheduled_mail_after_turn(run: Run) -> None:
    """The engine's `turn_ended` hook: a noted turn that succeeded gets its answer mailed."""
    if run.status != RunStatus.SUCCEEDED or not settings.REMINDER_EMAIL_FROM:
        return
    try:
        noted = cache.get(NOTED_KEY.format(run.id))
    except Exception:  # noqa: BLE001
        return
    if noted:
        enqueue("reminders.mail_scheduled_answer", str(run.id))


def scheduled_mail_send(*, run_id: uuid.UUID) -> bool:
    """Mail the turn's answer, headed by its session's title, to its user, once; whether it
    was sent now."""
    run = Run.objects.select_related("user", "session").get(pk=run_id)
    address = run.user.email
    if not address or not settings.REMINDER_EMAIL_FROM:
        return False
    if not cache.add(SENT_KEY.format(run_id), 1, KEEP_SECONDS):
        return False
    body = "\n\n".join(answer_pieces(run, limit=10**9))
    EmailMessage(
        subject=(run.session.title or "")[:150],
        body=body,
        from_email=settings.REMINDER_EMAIL_FROM,
        to=[address],
        headers={"X-Scheduled-Run": str(run.id)},
    ).send()
    return True
