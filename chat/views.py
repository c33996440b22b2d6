"""The web chat page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from agents.models import Agent
from agents.selectors import agent_usable_by
from chat.selectors import sessions_of

# Starters on the empty page; each one works with the built-in offline model's rules too.
SUGGESTIONS = [
    "What is 12*(3+4)?",
    "What time is it?",
    "Budget check: what is 1200*0.05?",
    "Search my chats for budget",
]

FIRST_PAINT_SESSIONS = 100  # the rest come from /api/v1/sessions/ ("Show more")


def usable_experts(*, entry: Agent, user: Any) -> list[str]:
    """Display names of the experts the entry agent may ask that this user may use: an expert
    behind an access rule the user does not pass is not offered on the start page."""
    experts = (
        entry.allowed_subagents.filter(enabled=True, delegatable=True)
        .select_related("access_group")
        .order_by("display_name")
    )
    return [agent.display_name for agent in experts if agent_usable_by(agent=agent, user=user)]


@login_required
def chat_index(request: HttpRequest) -> HttpResponse:
    """The chat page: the user's recent sessions (first paint), and a client that streams over
    /ws/chat/ and manages sessions through /api/v1/sessions/."""
    entry = Agent.objects.filter(is_entry=True, enabled=True).first()
    offline = entry is not None and (
        entry.provider == "offline"
        or (entry.provider == "default" and settings.DEFAULT_MODEL_PROVIDER == "offline")
    )
    experts = usable_experts(entry=entry, user=request.user) if entry else []
    sessions = list(sessions_of(user=request.user)[: FIRST_PAINT_SESSIONS + 1])
    context = {
        "sessions": sessions[:FIRST_PAINT_SESSIONS],
        "more_sessions": len(sessions) > FIRST_PAINT_SESSIONS,
        "entry_agent": entry,
        "experts": experts,
        "offline": offline,
        "suggestions": SUGGESTIONS,
        "page_title": entry.display_name if entry else "Agents",
        "max_chars": settings.CHAT_MAX_MESSAGE_CHARS,
    }
    return render(request, "chat/index.html", context)
