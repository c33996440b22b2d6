"""Messages to Slack through its official SDK: a "working" note in the thread, replaced by the
answer (an update is the same however often it is retried); the SDK waits out 429s."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from chat.channels.configured import TEXT_LIMITS
from chat.channels.models import Channel
from chat.channels.text import plain_text

TEXT_LIMIT = TEXT_LIMITS[Channel.SLACK]


def _client() -> WebClient:
    return WebClient(
        token=settings.SLACK_BOT_TOKEN,
        base_url=settings.SLACK_API_BASE_URL,
        timeout=15,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=4)],
    )


def slack_show_working(reply: dict[str, Any]) -> dict[str, Any]:
    """Post the note that the agents are at work in the thread; its ts, to replace later."""
    answer = _client().chat_postMessage(
        channel=reply["channel"], thread_ts=reply.get("thread") or None, text=_("Working on it…")
    )
    return {"ts": answer["ts"]}


def slack_show_progress(reply: dict[str, Any], line: str, *, answer: bool = False) -> None:
    """The working note now says what the agents are doing, in italics, or shows the answer
    so far, as plain text with an ellipsis (no retries: a line that cannot be shown now is not
    worth a wait)."""
    if not reply.get("ts"):
        return
    text = f"{plain_text(line)[: TEXT_LIMIT - 2]} …" if answer else f"_{line}_"
    client = WebClient(
        token=settings.SLACK_BOT_TOKEN, base_url=settings.SLACK_API_BASE_URL, timeout=5
    )
    client.chat_update(channel=reply["channel"], ts=reply["ts"], text=text)


def slack_post_blocks(channel: str, text: str, blocks: list[dict[str, Any]]) -> str:
    """Post a message with blocks (`text` for notifications and old clients); its ts."""
    return str(_client().chat_postMessage(channel=channel, text=text, blocks=blocks)["ts"])


def slack_replace(channel: str, ts: str, text: str) -> None:
    """Replace a message (its blocks too) with plain text."""
    _client().chat_update(channel=channel, ts=ts, text=text, blocks=[])


def slack_note(channel: str, user: str, text: str) -> None:
    """A note in a channel only `user` sees."""
    _client().chat_postEphemeral(channel=channel, user=user, text=text)


def slack_send(
    reply: dict[str, Any], texts: list[str], *, retry_key: uuid.UUID, retry: bool
) -> None:
    """The first text replaces the working note (or starts the thread's answer), the rest
    follow in the thread. Slack has no retry key: a retry repeats the update harmlessly, and
    may repeat a follow-up piece whose sending was cut off (answers of one piece: never)."""
    client = _client()
    first, *rest = texts
    if reply.get("ts"):
        client.chat_update(channel=reply["channel"], ts=reply["ts"], text=first)
    else:
        client.chat_postMessage(
            channel=reply["channel"], thread_ts=reply.get("thread") or None, text=first
        )
    for text in rest:
        client.chat_postMessage(
            channel=reply["channel"], thread_ts=reply.get("thread") or None, text=text
        )
