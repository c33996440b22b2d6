"""Chat tools: search the user's own past conversations."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext_lazy, ngettext

from agents.registry import ToolContext, tool
from chat.models import ChatMessage, MessageRole

_SEARCH = re.compile(r"(?:search|find)\s+(?:in\s+)?my\s+chats?\s+(?:for\s+)?(.+)", re.IGNORECASE)


def search_args(text: str) -> dict[str, Any] | None:
    """Offline-model rule: "search my chats for budget" → {"query": "budget"}."""
    match = _SEARCH.search(text)
    return {"query": match.group(1).strip(" ?.!")} if match else None


def _searched(arguments: dict[str, Any], result: Any) -> str:
    """ "Searched your chats for “budget”: 3 messages"."""
    count = len(result.get("matches") or []) if isinstance(result, dict) else 0
    words = ngettext(
        "Searched your chats for “%(query)s”: %(count)s message",
        "Searched your chats for “%(query)s”: %(count)s messages",
        count,
    )
    return words % {"query": arguments.get("query", ""), "count": count}


@tool(
    "search_my_chats",
    "Search the user's own earlier chat messages for a word or phrase.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 2, "maxLength": 200},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    offline_rule=search_args,
    offline_priority=200,
    title=gettext_lazy("Search your chats"),
    summarize=_searched,
)
def search_my_chats(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Matching messages from this user's sessions only, newest first."""
    matches = ChatMessage.objects.filter(
        session__user=context.user,
        role__in=[MessageRole.USER, MessageRole.AGENT],
        content__icontains=args["query"],
    )
    if context.run is not None:  # not the question being answered, nor its answer
        matches = matches.exclude(run=context.run).exclude(pk=context.run.user_message_id)
    matches = matches.select_related("session").order_by("-created_at")[: args.get("limit", 5)]
    return {
        "matches": [
            {
                "session": m.session.title or str(m.session_id),
                "role": m.role,
                "when": m.created_at.isoformat(timespec="minutes"),
                "text": m.content[:300],
            }
            for m in matches
        ]
    }
