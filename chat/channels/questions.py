"""A turn's question to its user (ask_user) put in the channel the turn came from, and the
user's next message there taken as the answer."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import translation

from chat.channels.delivery import delivery_expected
from chat.channels.models import Delivery, InboundEvent
from chat.channels.senders import channel_ask
from config.enqueue import enqueue
from delegation.humans.decisions import item_decide
from delegation.humans.models import Audience, Decision, InboxItem, ItemKind, ItemStatus
from delegation.models import Run

QUESTION_NAMESPACE = uuid.UUID("1b0f9c3e-8d0a-4c55-9a62-5f3f0d9e7a41")


def question_after_wait(run: Run, item: Any) -> None:
    """A run now waits for its user: ask them in the channel, if the turn came from one
    (engine hook `person_waiting`)."""
    if item.audience != Audience.USER or item.kind != ItemKind.QUESTION:
        return
    if delivery_expected(run.root_id or run.id):
        enqueue("chat_channels.question_send", str(item.id))


def question_send(*, item_id: uuid.UUID) -> None:
    """Put the item's question to the chat of the turn it belongs to, unless answered."""
    item = InboxItem.objects.select_related("run").filter(pk=item_id).first()
    if item is None or item.status != ItemStatus.PENDING:
        return
    root = item.run.root_id or item.run_id
    delivery = Delivery.objects.select_related("event").filter(run_id=root).first()
    if delivery is None:
        return
    choices = [str(option) for option in item.options or [] if str(option).strip()]
    with translation.override(item.run.language or None):
        key = uuid.uuid5(QUESTION_NAMESPACE, str(item.id))
        channel_ask(delivery.event.channel, delivery.event.reply, item.question, choices, key=key)


def question_answered(event: InboundEvent, *, user: Any, session_id: uuid.UUID) -> bool:
    """Take the message as the answer to the question the user's turn in this conversation
    waits for; False when none waits."""
    item = (
        InboxItem.objects.filter(
            status=ItemStatus.PENDING,
            audience=Audience.USER,
            kind=ItemKind.QUESTION,
            user=user,
            run__session_id=session_id,
        )
        .order_by("created_at")
        .first()
    )
    if item is None:
        return False
    item_decide(item=item, user=user, decision=Decision.APPROVE, answer=event.text)
    return True
