"""The gateway: a channel's event kept once, its account's user found, a turn started for them."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from chat.channels.delivery import delivery_expect
from chat.channels.models import (
    ChannelLink,
    Delivery,
    InboundEvent,
    InboundStatus,
    LinkCode,
)
from chat.channels.questions import question_answered
from chat.channels.senders import channel_send, channel_show_working
from config.enqueue import enqueue
from config.errors import AppError
from config.text import reply_language
from delegation.turns.start import turn_start

# Message ids of channel messages: the same event always makes the same message.
MESSAGE_NAMESPACE = uuid.UUID("6f1d7c52-3a0e-4df4-9a55-1c4f3a8e2b17")
LINK_CODE_MINUTES = 30


@dataclass(frozen=True)
class Inbound:
    """One event as a channel's webhook parser reads it."""

    channel: str
    event_id: str
    external_id: str
    kind: str  # "text", or the channel's name for what else it was (sticker, image…)
    text: str = ""
    reply: dict[str, Any] = field(default_factory=dict)


def inbound_accept(inbound: Inbound) -> bool:
    """Keep the event once and start its processing after commit; False for a repeat."""
    try:
        with transaction.atomic():
            event = InboundEvent.objects.create(
                channel=inbound.channel,
                event_id=inbound.event_id,
                external_id=inbound.external_id,
                kind=inbound.kind,
                text=inbound.text[: settings.CHAT_MAX_MESSAGE_CHARS + 1],
                reply=inbound.reply,
            )
            enqueue("chat_channels.inbound_process", event.pk)
    except IntegrityError:
        return False
    return True


def inbound_process(*, event_id: int) -> None:
    """Answer the event: a link for an unknown account, a note for what is not text, else a
    turn for the linked user whose answer goes back when it ends. Running it again for the
    same event starts nothing twice."""
    event = InboundEvent.objects.get(pk=event_id)
    if event.status != InboundStatus.RECEIVED and event.status != InboundStatus.STARTED:
        return
    language = reply_language(event.text) if event.text else settings.LANGUAGE_CODE
    with translation.override(language):
        link = ChannelLink.objects.filter(
            channel=event.channel, external_id=event.external_id
        ).first()
        if link is None:
            _notice(
                event, InboundStatus.UNLINKED, link_invitation(event.channel, event.external_id)
            )
        elif event.kind != "text":
            note = _("I can read text only for now: please write your question.")
            _notice(event, InboundStatus.UNSUPPORTED, note)
        else:
            _turn(event, link, language)


def _turn(event: InboundEvent, link: ChannelLink, language: str) -> None:
    """Start the user's turn and its delivery in one commit (the answer cannot end unseen);
    or, when their turn in this conversation waits for their answer, answer it."""
    session_id = conversation_session(link, event)
    try:
        with transaction.atomic():
            if question_answered(event, user=link.user, session_id=session_id):
                InboundEvent.objects.filter(pk=event.pk).update(status=InboundStatus.ANSWERED)
                return
    except AppError as exc:  # decided meanwhile, on the page or by its deadline
        _notice(event, InboundStatus.REFUSED, exc.message)
        return
    if event.status == InboundStatus.RECEIVED and "ts" not in event.reply:  # (once)
        event.reply |= channel_show_working(event.channel, event.reply)
        InboundEvent.objects.filter(pk=event.pk).update(reply=event.reply)
    try:
        with transaction.atomic():
            sent = turn_start(
                user=link.user,
                session_id=session_id,
                message_id=uuid.uuid5(MESSAGE_NAMESPACE, f"{event.channel}:{event.event_id}"),
                text=event.text,
                language=language,
            )
            if sent.run is not None:
                Delivery.objects.get_or_create(event=event, defaults={"run_id": sent.run.id})
                delivery_expect(sent.run.id)
            InboundEvent.objects.filter(pk=event.pk).update(status=InboundStatus.STARTED)
    except AppError as exc:  # an empty or too long message, an agent they may not use…
        _notice(event, InboundStatus.REFUSED, exc.message)


def conversation_session(link: ChannelLink, event: InboundEvent) -> uuid.UUID:
    """The session an event continues: the account's own, or one per thread (Slack)."""
    thread = event.reply.get("thread")
    return uuid.uuid5(link.session_id, str(thread)) if thread else link.session_id


def _notice(event: InboundEvent, status: str, text: str) -> None:
    """Answer the event with one plain note, once."""
    updated = InboundEvent.objects.filter(pk=event.pk, status=InboundStatus.RECEIVED).update(
        status=status
    )
    if updated:
        key = uuid.uuid5(MESSAGE_NAMESPACE, f"notice:{event.channel}:{event.event_id}")
        channel_send(event.channel, event.reply, [text], retry_key=key, retry=False)


def link_invitation(channel: str, external_id: str) -> str:
    """The note to an unknown account: a one-time link to confirm on the signed-in page."""
    code = link_code_issue(channel=channel, external_id=external_id)
    url = settings.SITE_URL.rstrip("/") + reverse("channel-link", args=[code.code])
    return _(
        "This account is not linked to anyone here yet. Open %(url)s, sign in, and confirm "
        "the link; then write again. The link works for %(minutes)s minutes."
    ) % {"url": url, "minutes": LINK_CODE_MINUTES}


def link_code_issue(*, channel: str, external_id: str) -> LinkCode:
    """A fresh one-time code for the channel account to be linked with."""
    return LinkCode.objects.create(
        code=secrets.token_urlsafe(16),
        channel=channel,
        external_id=external_id,
        expires_at=timezone.now() + timedelta(minutes=LINK_CODE_MINUTES),
    )
