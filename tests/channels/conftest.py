"""Fixtures of the channel tests: a fake LINE API and signed webhook requests."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.channels.fake_line import FakeLine, start_fake_line
from tests.channels.fake_slack import FakeSlack, start_fake_slack

SECRET = "line-secret"


def switched_on(settings: Any, started: tuple[Any, Any], **values: str) -> Iterator[Any]:
    """A channel's settings pointing at its running fake (`started`: the fake and its server,
    shut down afterwards); turns and deliveries run as they are enqueued."""
    fake, server = started
    for name, value in values.items():
        setattr(settings, name, value.replace("{fake}", fake.url))
    settings.SITE_URL = "https://agents.example.com"
    settings.TASKS_RUN_SYNC = True
    try:
        yield fake
    finally:
        server.shutdown()


@pytest.fixture
def line(settings) -> Iterator[FakeLine]:
    """LINE switched on, its API a local fake."""
    yield from switched_on(
        settings,
        start_fake_line(),
        LINE_CHANNEL_SECRET=SECRET,
        LINE_CHANNEL_ACCESS_TOKEN="line-token",
        LINE_API_BASE_URL="{fake}",
    )


def line_body(*events: dict[str, Any]) -> bytes:
    """A webhook request body as LINE sends it."""
    return json.dumps({"destination": "Ubot", "events": list(events)}).encode()


def signature(body: bytes, secret: str = SECRET) -> str:
    """LINE's X-Line-Signature of a body: base64 of its HMAC-SHA256 under the channel secret."""
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest()).decode()


def text_event(
    text: str, *, user: str = "U1111", event_id: str = "", redelivery: bool = False
) -> dict[str, Any]:
    """A one-to-one text message event."""
    return {
        "type": "message",
        "mode": "active",
        "timestamp": int(time.time() * 1000),
        "source": {"type": "user", "userId": user},
        "webhookEventId": event_id or uuid.uuid4().hex.upper()[:26],
        "deliveryContext": {"isRedelivery": redelivery},
        "replyToken": uuid.uuid4().hex,
        "message": {"id": "1", "type": "text", "quoteToken": "q", "text": text},
    }


def sticker_event(*, user: str = "U1111") -> dict[str, Any]:
    """A sticker message event."""
    event = text_event("", user=user)
    event["message"] = {
        "id": "2",
        "type": "sticker",
        "quoteToken": "q",
        "packageId": "1",
        "stickerId": "1",
        "stickerResourceType": "STATIC",
    }
    return event


def post_webhook(client: Any, body: bytes, sign: str | None = None) -> Any:
    """POST a webhook request, signed correctly unless `sign` says otherwise."""
    headers = {} if sign == "" else {"HTTP_X_LINE_SIGNATURE": sign or signature(body)}
    return client.post(
        "/channels/line/webhook", data=body, content_type="application/json", **headers
    )


SLACK_SECRET = "slack-signing-secret"


@pytest.fixture
def slack(settings) -> Iterator[FakeSlack]:
    """Slack switched on, its Web API a local fake."""
    yield from switched_on(
        settings,
        start_fake_slack(),
        SLACK_SIGNING_SECRET=SLACK_SECRET,
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_API_BASE_URL="{fake}",
    )


def slack_event(
    text: str,
    *,
    user: str = "W111",
    kind: str = "app_mention",
    event_id: str = "",
    thread: str = "",
) -> dict[str, Any]:
    """An Events API callback as Slack sends it: a mention in a channel, or a direct message."""
    ts = f"{time.time():.6f}"
    event: dict[str, Any] = {"type": kind, "user": user, "text": f"<@UBOT> {text}", "ts": ts}
    event["channel"] = "D111" if kind == "message" else "C111"
    if kind == "message":
        event["channel_type"] = "im"
    if thread:
        event["thread_ts"] = thread
    return {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": event_id or "Ev" + uuid.uuid4().hex[:10].upper(),
        "event_time": int(time.time()),
        "event": event,
    }


def post_slack(
    client: Any, payload: dict[str, Any], *, secret: str = SLACK_SECRET, age: int = 0, **extra: str
) -> Any:
    """POST an Events API request signed as Slack signs it (v0, timestamp, HMAC-SHA256)."""
    body = json.dumps(payload).encode()
    return post_signed(
        client, "/channels/slack/events", body, "application/json", secret, age, extra
    )


def post_click(client: Any, payload: Any, *, secret: str = SLACK_SECRET, raw: bytes = b"") -> Any:
    """POST an interactivity request as Slack sends it: the payload as JSON in a form field."""
    body = raw or urlencode({"payload": json.dumps(payload)}).encode()
    kind = "application/x-www-form-urlencoded"
    return post_signed(client, "/channels/slack/interactions", body, kind, secret, 0, {})


def click_payload(item_id: Any, *, action: str = "approve", user: str = "WPAT") -> dict[str, Any]:
    """A block_actions payload: `user` clicked `action` on the request's posted message."""
    return {
        "type": "block_actions",
        "user": {"id": user, "team_id": "T1"},
        "container": {
            "type": "message",
            "channel_id": "CAPPROVE",
            "message_ts": "1700000001.000100",
        },
        "actions": [{"action_id": action, "value": str(item_id), "type": "button"}],
    }


def post_signed(
    client: Any, path: str, body: bytes, kind: str, secret: str, age: int, extra: dict[str, str]
) -> Any:
    """POST a body signed as Slack signs it (v0, timestamp, HMAC-SHA256)."""
    timestamp = str(int(time.time()) - age)
    base = f"v0:{timestamp}:{body.decode()}".encode()
    sign = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return client.post(
        path,
        data=body,
        content_type=kind,
        HTTP_X_SLACK_REQUEST_TIMESTAMP=timestamp,
        HTTP_X_SLACK_SIGNATURE=sign,
        **extra,
    )
