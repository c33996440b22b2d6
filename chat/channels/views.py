"""The channels' doors: LINE's webhook, and the signed-in pages to link and unlink accounts."""

from __future__ import annotations

import json
import logging
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from chat.channels.approvals import approval_click, approval_clicked
from chat.channels.configured import line_configured, slack_configured
from chat.channels.gateway import inbound_accept
from chat.channels.line.webhook import BadSignature, line_inbound
from chat.channels.links import (
    link_code_usable,
    link_confirm,
    link_remove,
    link_set_reminders,
)
from chat.channels.models import ChannelLink
from chat.channels.slack.events import BadRequest, slack_inbound, slack_signed, slack_verified
from config.errors import AppError

logger = logging.getLogger(__name__)

MAX_WEBHOOK_BYTES = 1_000_000  # LINE's requests are a few kB; anything this large is not LINE's


def _refused(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


@csrf_exempt
@require_POST
def line_webhook(request: HttpRequest) -> HttpResponse:
    """LINE's events: checked, each kept once and processed after this answer (LINE waits
    only a few seconds); a redelivered event is acknowledged and ignored."""
    if not line_configured():
        return _refused(404, "not_found", "LINE is not configured on this server.")
    if len(request.body) > MAX_WEBHOOK_BYTES:
        return _refused(413, "invalid", "The request is too large.")
    try:
        body = request.body.decode("utf-8")
        inbound = line_inbound(body, request.headers.get("X-Line-Signature", ""))
    except BadSignature as exc:
        status = 400 if "no " in str(exc) else 403
        return _refused(status, "permission_denied", f"Refused: {exc}.")
    except (UnicodeDecodeError, ValueError) as exc:
        return _refused(400, "invalid", f"The request is not a LINE webhook: {exc}")
    kept = sum(inbound_accept(event) for event in inbound)
    logger.info("LINE webhook: %s events, %s new", len(inbound), kept)
    return JsonResponse({"ok": True})


@csrf_exempt
@require_POST
def slack_events(request: HttpRequest) -> HttpResponse:
    """Slack's Events API: the URL check answered, a mention or direct message kept once (a
    retry of it, X-Slack-Retry-Num, is acknowledged and ignored) and processed after this
    answer (Slack waits three seconds)."""
    if not slack_configured():
        return _refused(404, "not_found", "Slack is not configured on this server.")
    if len(request.body) > MAX_WEBHOOK_BYTES:
        return _refused(413, "invalid", "The request is too large.")
    try:
        payload = slack_verified(request.body, request.headers)
        if payload.get("type") == "url_verification":
            return JsonResponse({"challenge": str(payload.get("challenge", ""))})
        inbound = slack_inbound(payload)
    except BadRequest as exc:
        return _refused(403, "permission_denied", f"Refused: {exc}.")
    except (UnicodeDecodeError, ValueError) as exc:
        return _refused(400, "invalid", f"The request is not a Slack event: {exc}")
    if inbound is not None:
        inbound_accept(inbound)
    return JsonResponse({"ok": True})


@csrf_exempt
@require_POST
def slack_interactions(request: HttpRequest) -> HttpResponse:
    """Slack's interactivity requests: a click on a staff approval's button decides it as the
    clicking account's linked user (see chat.channels.approvals); anything else is refused."""
    if not slack_configured():
        return _refused(404, "not_found", "Slack is not configured on this server.")
    if len(request.body) > MAX_WEBHOOK_BYTES:
        return _refused(413, "invalid", "The request is too large.")
    try:
        slack_signed(request.body, request.headers)
        payload = json.loads(QueryDict(request.body).get("payload") or "null")
        if not isinstance(payload, dict):
            raise ValueError("no payload form field with a JSON object")
        click = approval_click(payload)
    except BadRequest as exc:
        return _refused(403, "permission_denied", f"Refused: {exc}.")
    except (UnicodeDecodeError, ValueError) as exc:
        return _refused(400, "invalid", f"The request is not a Slack button click: {exc}")
    if click is not None:
        approval_clicked(click)
    return HttpResponse(status=200)


@login_required
@require_http_methods(["GET", "POST"])
def link_page(request: HttpRequest, code: str) -> HttpResponse:
    """Confirm that the channel account which got this code is the signed-in user's."""
    try:
        found = link_code_usable(code=code)
    except AppError as exc:
        return render(request, "channels/link.html", {"error": exc.message}, status=404)
    if request.method == "POST":
        try:
            link_confirm(user=request.user, code=code)
        except AppError as exc:
            return render(request, "channels/link.html", {"error": exc.message}, status=409)
        messages.success(request, _("Linked. You can write to the bot now."))
        return redirect("channel-links")
    return render(request, "channels/link.html", {"code": found})


@login_required
def links_page(request: HttpRequest) -> HttpResponse:
    """The signed-in user's linked channel accounts, each removable."""
    links = ChannelLink.objects.filter(user=cast(Any, request.user)).order_by(
        "channel", "created_at"
    )
    return render(request, "channels/links.html", {"links": links, "demo_line": settings.DEMO_LINE})


@login_required
@require_POST
def link_remove_view(request: HttpRequest, link_id: int) -> HttpResponse:
    """Remove one of the user's links: that account's messages start nothing from now on."""
    try:
        link_remove(user=request.user, link_id=link_id)
    except AppError as exc:
        return render(request, "channels/links.html", {"error": exc.message}, status=404)
    messages.success(request, _("The link is removed."))
    return redirect("channel-links")


@login_required
@require_POST
def link_reminders_view(request: HttpRequest, link_id: int) -> HttpResponse:
    """Turn reminders on or off for one of the user's links (`on`: "1" or "0")."""
    on = request.POST.get("on") == "1"
    try:
        link_set_reminders(user=request.user, link_id=link_id, on=on)
    except AppError as exc:
        return render(request, "channels/links.html", {"error": exc.message}, status=404)
    if on:
        messages.success(request, _("Reminders will come here too."))
    else:
        messages.success(request, _("Reminders will no longer come here."))
    return redirect("channel-links")
