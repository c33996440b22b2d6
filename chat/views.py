"""The web chat page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from agents.mcp.selectors import connectable_servers
from agents.models import Agent
from agents.selectors import agent_usable_by
from chat.channels.links import links_offered
from chat.selectors import sessions_of
from chat.voice.selectors import voice_features
from config.text import joined

# Starters on the empty page, each offered only when what answers it is there (an expert of the
# entry agent this user may use, or a tool of the entry agent), and each worded so the built-in
# offline model's rules route it too; translated into the user's language.
SUGGESTIONS: list[tuple[str, str, Any]] = [
    ("expert", "tasks", _("Add a task: pick up Mum at the airport on Saturday morning")),
    ("expert", "weather", _("Will it rain in Taipei tomorrow?")),
    ("expert", "hr", _("Leave rules: how many days of sick leave do I get?")),
    ("expert", "finance", _("Budget check: what is 1200*0.05?")),
    ("tool", "current_time", _("What time is it?")),
    ("tool", "calculate", _("What is 12*(3+4)?")),
]
MAX_SUGGESTIONS = 4

FIRST_PAINT_SESSIONS = 100  # the rest come from /api/v1/sessions/ ("Show more")


def usable_experts(*, entry: Agent, user: Any) -> list[Agent]:
    """The experts the entry agent may ask that this user may use: an expert behind an access
    rule the user does not pass is not offered on the start page."""
    experts = entry.allowed_subagents.filter(enabled=True, delegatable=True).select_related(
        "access_group"
    )
    usable = [agent for agent in experts if agent_usable_by(agent=agent, user=user)]
    return sorted(usable, key=lambda agent: agent.name_in())


def suggestions_for(*, entry: Agent | None, experts: list[Agent]) -> list[str]:
    """The start page's suggestions this entry agent and these experts can answer."""
    if entry is None:
        return []
    names = {agent.name for agent in experts}
    tools = set(entry.tool_keys or [])
    offered = [
        str(text)
        for kind, needs, text in SUGGESTIONS
        if (needs in names if kind == "expert" else needs in tools)
    ]
    return offered[:MAX_SUGGESTIONS]


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
        # Names in the page's language; `experts_joined` as a list is written there (、 in
        # Chinese), `entry_name` the entry agent's name.
        "experts": [agent.name_in() for agent in experts],
        "experts_joined": joined([agent.name_in() for agent in experts]),
        "entry_name": entry.name_in() if entry else "",
        "offline": offline,
        "suggestions": suggestions_for(entry=entry, experts=experts),
        "page_title": entry.name_in() if entry else _("Agents"),
        "max_chars": settings.CHAT_MAX_MESSAGE_CHARS,
        "quiet_resync_ms": int(settings.CHAT_QUIET_RESYNC_SECONDS * 1000),
        # Systems that act with each person's own account (agents/mcp): a link to connect them.
        "connections": bool(connectable_servers(user=request.user)),
        # The microphone and "Read aloud", each shown when its model is set (docs/voice.md).
        "voice": voice_features(),
        # LINE or Slack switched on: where a person sees and removes their linked accounts.
        "chat_accounts": links_offered(),
    }
    return render(request, "chat/index.html", context)
