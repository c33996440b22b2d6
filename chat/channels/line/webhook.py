"""LINE's webhook request read with its official SDK: signature checked, events as inbound."""

from __future__ import annotations

from django.conf import settings
from linebot.v3 import WebhookParser
from linebot.v3.exceptions import InvalidSignatureError
from linebot.v3.webhooks import (
    GroupSource,
    MessageEvent,
    RoomSource,
    TextMessageContent,
)

from chat.channels.gateway import Inbound
from chat.channels.models import Channel


class BadSignature(Exception):
    """The request is not LINE's: its signature is missing or does not match the secret."""


def line_inbound(body: str, signature: str) -> list[Inbound]:
    """The message events of a webhook request, after its signature is checked; other events
    (follows, reads, postbacks) are acknowledged and not kept."""
    if not signature:
        raise BadSignature("no X-Line-Signature header")
    try:
        events = WebhookParser(settings.LINE_CHANNEL_SECRET).parse(body, signature)
    except InvalidSignatureError as exc:
        raise BadSignature("the signature does not match") from exc
    found = []
    for event in events:
        if not isinstance(event, MessageEvent) or not getattr(event.source, "user_id", None):
            continue
        source = event.source
        if isinstance(source, GroupSource):
            chat = source.group_id
        elif isinstance(source, RoomSource):
            chat = source.room_id
        else:
            chat = source.user_id
        text = event.message.text if isinstance(event.message, TextMessageContent) else ""
        found.append(
            Inbound(
                channel=Channel.LINE,
                event_id=event.webhook_event_id,
                external_id=source.user_id,
                kind="text"
                if isinstance(event.message, TextMessageContent)
                else event.message.type,
                text=text,
                reply={"token": event.reply_token, "to": chat, "at_ms": event.timestamp},
            )
        )
    return found
