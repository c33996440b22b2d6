"""A channel turn's answer back to its chat, once: when the turn ends, the answer (or its plain
failure) goes out in the channel's pieces; a retried delivery never shows it twice."""

from __future__ import annotations

import logging
import time
import uuid

from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.utils import timezone, translation

from chat.channels.configured import TEXT_LIMITS
from chat.channels.errors import RateLimited
from chat.channels.models import Delivery, DeliveryStatus
from chat.channels.notices import notices_queue
from chat.channels.senders import channel_send
from chat.channels.text import pieces, plain_text, sources_text
from chat.models import ChatMessage, MessageRole
from config.enqueue import enqueue
from delegation.models import Run

logger = logging.getLogger(__name__)

RATE_LIMIT_WAITS = (1.0, 2.0, 4.0, 8.0)  # seconds before each new try after a 429
# A turn a channel started, as the cache remembers it: every turn's end asks, and a cache read
# (in-process, or one Redis round trip) keeps that off the database (tests/delegation's query
# counts). A forgotten one (a restart of an embedded server, Redis down) is the sweep's.
EXPECTED_KEY = "channel-turn:{}"
EXPECTED_SECONDS = 24 * 3600
REPLY, NOTICE = 1, 2  # an answer to the chat the turn came from; a notice to linked accounts


def delivery_expect(run_id: uuid.UUID, *, notice: bool = False) -> None:
    """Remember that the turn's answer goes back to a channel when it ends: to the chat its
    message came from, or (`notice`: a scheduled prompt's) to the accounts its user linked
    for notices."""
    try:
        cache.set(EXPECTED_KEY.format(run_id), NOTICE if notice else REPLY, EXPECTED_SECONDS)
    except Exception as exc:  # noqa: BLE001 (any cache error: the sweep delivers it later)
        logger.warning("could not note channel turn %s (%s); the sweep delivers it", run_id, exc)


def delivery_expected(run_id: uuid.UUID) -> bool:
    """Whether the turn came from a channel's chat (False when the cache cannot tell)."""
    return _expected(run_id) == REPLY


def _expected(run_id: uuid.UUID) -> int | None:
    try:
        return cache.get(EXPECTED_KEY.format(run_id))
    except Exception as exc:  # noqa: BLE001
        logger.warning("could not read channel turn %s (%s); the sweep delivers it", run_id, exc)
        return None


def delivery_after_turn(run: Run) -> None:
    """The turn ended: send its answer where it goes (engine hook `turn_ended`)."""
    expected = _expected(run.id)
    if expected == REPLY:
        enqueue("chat_channels.delivery_send", str(run.id))
    elif expected == NOTICE:
        enqueue("chat_channels.answer_notice", str(run.id))


def answer_notice(*, run_id: uuid.UUID) -> int:
    """A scheduled turn's answer, headed by its session's title, to each account its user
    linked for notices (each sent once); how many sends were queued."""
    run = Run.objects.select_related("session").get(pk=run_id)
    with translation.override(run.language or None):
        answer = "\n\n".join(answer_pieces(run, limit=10**9))
    text = f"{run.session.title}\n\n{answer}" if run.session.title else answer
    return notices_queue([(run.user_id, text, f"scheduled:{run.id}")])


def delivery_send(*, run_id: uuid.UUID) -> None:
    """Send the turn's answer to the chat its message came from, unless it went already."""
    with transaction.atomic():
        delivery = (
            Delivery.objects.select_for_update()
            .select_related("event")
            .filter(run_id=run_id, status=DeliveryStatus.PENDING)
            .first()
        )
        if delivery is None:
            return
        # Counted before sending: a later attempt knows an earlier one may have sent it.
        Delivery.objects.filter(pk=delivery.pk).update(
            attempts=F("attempts") + 1, attempted_at=timezone.now()
        )
    run = Run.objects.get(pk=run_id)
    event = delivery.event
    with translation.override(run.language or None):
        texts = answer_pieces(run, limit=TEXT_LIMITS[event.channel])
    for wait in (*RATE_LIMIT_WAITS, None):
        try:
            channel_send(
                event.channel,
                event.reply,
                texts,
                retry_key=delivery.retry_key,
                retry=delivery.attempts > 0,
            )
            break
        except RateLimited:
            if wait is None:
                raise
            time.sleep(wait)
    Delivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.SENT, sent_at=timezone.now()
    )


def answer_pieces(run: Run, *, limit: int) -> list[str]:
    """The turn's answer as plain text with its numbered sources, in pieces of `limit`."""
    answer = (
        ChatMessage.objects.filter(run_id=run.id, role=MessageRole.AGENT)
        .exclude(content="")
        .order_by("created_at", "id")
        .last()
    )
    if answer is None:
        return pieces(plain_text((run.error or {}).get("message") or "…"), limit)
    text = plain_text(answer.content)
    sources = sources_text(answer.citations or [])
    return pieces(f"{text}\n\n{sources}" if sources else text, limit)
