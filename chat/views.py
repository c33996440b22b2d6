"""The web chat page."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from agents.models import Agent
from chat.selectors import sessions_of


@login_required
def chat_index(request: HttpRequest) -> HttpResponse:
    """The chat page: the user's sessions, and a client that streams over /ws/chat/."""
    entry = Agent.objects.filter(is_entry=True, enabled=True).first()
    offline = entry is not None and (
        entry.provider == "offline"
        or (entry.provider == "default" and settings.DEFAULT_MODEL_PROVIDER == "offline")
    )
    context = {
        "sessions": sessions_of(user=request.user)[:100],
        "entry_agent": entry,
        "offline": offline,
        "max_chars": settings.CHAT_MAX_MESSAGE_CHARS,
    }
    return render(request, "chat/index.html", context)
