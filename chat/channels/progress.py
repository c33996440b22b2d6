"""A channel turn's progress in its chat: as an expert is asked, Slack's working note says so
("Asking Finance expert…") and LINE's loading animation starts again; as the entry agent's
answer streams, Slack's note shows it so far (LINE cannot edit a message); never after the
answer.

Best effort and rate-limited (one line per turn every PROGRESS_SECONDS; LINE's and Slack's
limits are per bot). The line is shown under a write on the turn's delivery row that only
matches before the answer's first attempt, and the answer's attempt waits for that write's
transaction: a late line can never replace an answer.
"""

from __future__ import annotations

import logging
import uuid

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from chat.channels.delivery import delivery_expected
from chat.channels.models import Delivery, DeliveryStatus
from chat.channels.senders import channel_show_progress
from config.enqueue import enqueue
from delegation.models import Run

logger = logging.getLogger(__name__)

PROGRESS_KEY = "channel-progress:{}"
PROGRESS_SECONDS = 2


def progress_after_expert_asked(caller: Run, line: str) -> None:
    """An expert was asked: show it in the turn's chat (engine hook `expert_asked`)."""
    turn = caller.root_id or caller.id
    if delivery_expected(turn):
        enqueue("chat_channels.progress_show", str(turn), line)


def progress_after_answer_grew(run: Run, text: str) -> None:
    """More of the turn's answer was saved: show it so far (engine hook `answer_growing`)."""
    if delivery_expected(run.id):
        enqueue("chat_channels.progress_show", str(run.id), text, True)


def progress_show(*, run_id: uuid.UUID, line: str, answer: bool = False) -> bool:
    """Show `line` (or, `answer`, the answer so far) in the turn's chat unless its answer is
    on its way (or a line was shown a moment ago); whether it was shown."""
    if not cache.add(PROGRESS_KEY.format(run_id), 1, PROGRESS_SECONDS):
        return False
    with transaction.atomic():
        before_answer = Delivery.objects.filter(
            run_id=run_id, status=DeliveryStatus.PENDING, attempts=0
        )
        if not before_answer.update(progress_at=timezone.now()):
            return False
        delivery = Delivery.objects.select_related("event").get(run_id=run_id)
        try:
            channel_show_progress(delivery.event.channel, delivery.event.reply, line, answer=answer)
        except Exception as exc:  # noqa: BLE001 (progress is best effort; the answer is not)
            logger.info("progress of turn %s not shown: %r", run_id, exc)
            return False
    return True
