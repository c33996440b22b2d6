"""A stand-in for LINE's Messaging API, for the offline demo: reply (a token once), push (a
retry key once: 409 after), loading animation. The platform's LINE sender reaches it through
line-bot-sdk as it would reach LINE (LINE_API_BASE_URL points here when DEMO_LINE is on)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from chat.channels.demo.store import chat_add, loading_start, reply_token_use

RETRY_KEY = "demo-line-retry:{}"


@csrf_exempt
@require_POST
def demo_line_api(request: HttpRequest, method: str) -> HttpResponse:
    """One call of LINE's API by the platform's sender, answered as LINE answers it."""
    if not settings.DEMO_LINE:
        raise Http404
    if request.headers.get("Authorization") != f"Bearer {settings.LINE_CHANNEL_ACCESS_TOKEN}":
        return JsonResponse({"message": "Authentication failed"}, status=401)
    try:
        body = json.loads(request.body)
    except ValueError:
        return JsonResponse({"message": "The request body has 1 error(s)"}, status=400)
    if method == "chat/loading/start":
        loading_start(str(body.get("chatId", "")), int(body.get("loadingSeconds") or 20))
        return JsonResponse({}, status=202)
    if method == "message/reply":
        account = reply_token_use(str(body.get("replyToken", "")))
        if account is None:
            return JsonResponse({"message": "Invalid reply token"}, status=400)
        return _shown(account, body)
    if method == "message/push":
        key = request.headers.get("X-Line-Retry-Key", "")
        if key and not cache.add(RETRY_KEY.format(key), 1, 24 * 3600):
            return JsonResponse({"message": "The retry key is already accepted"}, status=409)
        return _shown(str(body.get("to", "")), body)
    return JsonResponse({"message": "Not found"}, status=404)


def _shown(account: str, body: dict[str, Any]) -> JsonResponse:
    messages = body.get("messages") or []
    for message in messages:
        items = (message.get("quickReply") or {}).get("items") or []
        choices = [str(item["action"]["text"]) for item in items if item.get("action")]
        chat_add(account, "bot", str(message.get("text", "")), choices)
    return JsonResponse({"sentMessages": [{"id": str(i)} for i, _ in enumerate(messages)]})
