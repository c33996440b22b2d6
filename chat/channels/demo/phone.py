"""The offline demo's LINE phone (/demo/line/): the signed-in person writes as their own demo
LINE account; each message goes through the real door (a webhook request signed with the
channel secret, to /channels/line/webhook over HTTP) and the bot's replies show as they reach
the stand-in API. Nobody sees another person's phone: the account follows from who signed in."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chat.channels.demo.store import (
    chat_add,
    chat_of,
    demo_line_account,
    loading,
    reply_token_issue,
)
from chat.channels.models import Channel, ChannelLink

MAX_CHARS = 2000


@login_required
@require_GET
def demo_line_phone(request: HttpRequest) -> HttpResponse:
    """The phone: the chat so far and a box to write in."""
    account = _account(request)
    linked = ChannelLink.objects.filter(channel=Channel.LINE, external_id=account).exists()
    return render(request, "channels/demo_line.html", {"account": account, "linked": linked})


@login_required
@require_GET
def demo_line_chat(request: HttpRequest) -> JsonResponse:
    """The chat as JSON, for the phone to follow."""
    account = _account(request)
    return JsonResponse({"messages": chat_of(account), "loading": loading(account)})


@login_required
@require_POST
def demo_line_send(request: HttpRequest) -> JsonResponse:
    """Write `text` as the signed-in person's demo account: a signed webhook request."""
    account = _account(request)
    text = str(request.POST.get("text", "")).strip()
    if not text or len(text) > MAX_CHARS:
        message = _("Write between 1 and %(count)s characters.") % {"count": MAX_CHARS}
        return JsonResponse({"error": {"code": "invalid", "message": message}}, status=400)
    chat_add(account, "me", text)
    body = json.dumps({"destination": "Udemo", "events": [_event(account, text)]}).encode()
    secret = settings.LINE_CHANNEL_SECRET.encode()
    signature = base64.b64encode(hmac.new(secret, body, hashlib.sha256).digest()).decode()
    url = settings.DEMO_SITE_URL.rstrip("/") + reverse("line-webhook")
    try:
        answer = httpx.post(
            url,
            content=body,
            headers={"Content-Type": "application/json", "X-Line-Signature": signature},
            timeout=10,
        )
    except httpx.HTTPError as exc:
        message = _("The webhook could not be reached: %(error)s") % {"error": exc}
        return JsonResponse({"error": {"code": "unavailable", "message": message}}, status=502)
    return JsonResponse({"ok": answer.is_success, "webhook_status": answer.status_code})


def _account(request: HttpRequest) -> str:
    if not settings.DEMO_LINE:
        raise Http404
    return demo_line_account(request.user)


def _event(account: str, text: str) -> dict[str, Any]:
    """A one-to-one text message event as LINE sends it, with a reply token of its own."""
    token = uuid.uuid4().hex
    reply_token_issue(account, token)
    return {
        "type": "message",
        "mode": "active",
        "timestamp": int(time.time() * 1000),
        "source": {"type": "user", "userId": account},
        "webhookEventId": uuid.uuid4().hex.upper()[:26],
        "deliveryContext": {"isRedelivery": False},
        "replyToken": token,
        "message": {"id": uuid.uuid4().hex[:18], "type": "text", "quoteToken": "q", "text": text},
    }
