"""Notices the platform sends unasked (a reminder falling due, a scheduled prompt's answer) to
the channel accounts a user linked and left on for them; each sent once (LINE: its retry key;
Slack: sent after commit), in the channel's pieces."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from chat.channels.configured import TEXT_LIMITS
from chat.channels.models import Channel, ChannelLink
from chat.channels.senders import channel_send
from chat.channels.text import pieces
from config.enqueue import enqueue

NOTICE_NAMESPACE = uuid.UUID("9a4e8d62-0b7c-4f0e-8b1d-2c6a5e3f7d90")


def notices_queue(notices: Iterable[tuple[int, str, str]]) -> int:
    """Queue (user id, text, key) notices to each user's linked accounts that take them, after
    the current transaction commits; how many sends were queued."""
    by_user: dict[int, list[tuple[str, str]]] = {}
    for user_id, text, key in notices:
        by_user.setdefault(user_id, []).append((text, key))
    if not by_user:
        return 0
    links = ChannelLink.objects.filter(user_id__in=by_user, reminders=True).values_list(
        "pk", "user_id"
    )
    queued = 0
    for link_id, user_id in links:
        for text, key in by_user[user_id]:
            enqueue("chat_channels.notice_send", link_id, text, key)
            queued += 1
    return queued


def notice_send(*, link_id: int, text: str, key: str) -> None:
    """Send one notice to one linked account (gone: nothing)."""
    link = ChannelLink.objects.filter(pk=link_id, reminders=True).first()
    if link is None:
        return
    retry_key = uuid.uuid5(NOTICE_NAMESPACE, f"{link.pk}:{key}")
    if link.channel == Channel.LINE:
        reply = {"to": link.external_id}
    else:  # Slack: a direct message from the bot (a user id as the channel)
        reply = {"channel": link.external_id, "thread": ""}
    texts = pieces(text, TEXT_LIMITS[link.channel])
    channel_send(link.channel, reply, texts, retry_key=retry_key, retry=True)
