"""Slack's Events API request read with its official SDK: signature and age checked, mentions
and direct messages as inbound events (each answered in its own thread)."""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from slack_sdk.signature import SignatureVerifier

from chat.channels.gateway import Inbound
from chat.channels.models import Channel

_MENTION = re.compile(r"<@[A-Z0-9]+>\s*")


class BadRequest(Exception):
    """Not Slack's request: a missing, stale or wrong signature."""


def slack_verified(body: bytes, headers: Any) -> dict[str, Any]:
    """The request's JSON once its signature and timestamp (five minutes) check out."""
    slack_signed(body, headers)
    payload = json.loads(body)
    if not isinstance(payload, dict):
        raise ValueError("the body is not a JSON object")
    return payload


def slack_signed(body: bytes, headers: Any) -> None:
    """BadRequest unless the request's signature and timestamp (five minutes) check out."""
    verifier = SignatureVerifier(settings.SLACK_SIGNING_SECRET)
    timestamp = headers.get("X-Slack-Request-Timestamp")
    signature = headers.get("X-Slack-Signature")
    if not timestamp or not signature:
        raise BadRequest("no X-Slack-Signature or X-Slack-Request-Timestamp header")
    if not verifier.is_valid(body, timestamp, signature):
        raise BadRequest("the signature does not match, or the request is too old")


def slack_inbound(payload: dict[str, Any]) -> Inbound | None:
    """A mention of the bot or a direct message to it, as an inbound event; None for the rest
    (the bot's own messages, edits, joins)."""
    event = payload.get("event") or {}
    if not isinstance(event, dict) or event.get("bot_id") or event.get("subtype"):
        return None
    direct = event.get("type") == "message" and event.get("channel_type") == "im"
    if event.get("type") != "app_mention" and not direct:
        return None
    if not payload.get("event_id") or not event.get("user") or not event.get("channel"):
        raise ValueError("an event without its id, user or channel")
    thread = str(event.get("thread_ts") or event.get("ts") or "")
    return Inbound(
        channel=Channel.SLACK,
        event_id=str(payload["event_id"]),
        external_id=str(event["user"]),
        kind="text" if event.get("text") else "other",
        text=_MENTION.sub("", str(event.get("text") or "")).strip(),
        reply={"channel": event["channel"], "thread": thread},
    )
