"""The demo team: an entry agent and specialists with real tools, created once."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.models import Agent
from agents.services import agent_revision_record

DEMO_AGENTS: list[dict[str, Any]] = [
    {
        "name": "assistant",
        "display_name": "Assistant",
        "description": "Your general assistant: answers directly and asks experts when needed.",
        "tags": ["general", "orchestrator"],
        "system_prompt": (
            "You are a helpful assistant for the signed-in user. Use tools for facts you cannot "
            "know (the time, arithmetic, the user's earlier chats). Answer concisely."
        ),
        "tool_keys": ["current_time", "calculate", "search_my_chats"],
        "is_entry": True,
        "subagents": ["finance", "clock", "archivist"],
    },
    {
        "name": "finance",
        "display_name": "Finance expert",
        "description": "Budgets, costs, prices and money questions; the Math expert computes.",
        "tags": ["finance", "budget", "cost", "price", "money", "财务", "预算"],
        "system_prompt": (
            "You answer money questions. Ask the math expert for any computation and explain "
            "the result in one or two sentences."
        ),
        "tool_keys": [],
        "subagents": ["math"],
    },
    {
        "name": "math",
        "display_name": "Math expert",
        "description": "Exact arithmetic: totals, percentages, unit prices, budgets.",
        "tags": ["math", "arithmetic", "calculation", "计算"],
        "system_prompt": "You compute exactly with the calculate tool and show the expression.",
        "tool_keys": ["calculate"],
    },
    {
        "name": "clock",
        "display_name": "Time expert",
        "description": "The current date, time and weekday in any timezone.",
        "tags": ["time", "date", "timezone", "时间", "日期"],
        "system_prompt": "You tell the current date and time using the current_time tool.",
        "tool_keys": ["current_time"],
    },
    {
        "name": "archivist",
        "display_name": "Chat archivist",
        "description": "Finds what the user said or was told in earlier chats.",
        "tags": ["history", "search", "memory", "记录"],
        "system_prompt": "You search the user's earlier chats and quote what you find.",
        "tool_keys": ["search_my_chats"],
    },
]


@transaction.atomic
def seed_demo_agents() -> list[str]:
    """Create the demo agents that do not exist yet (admins' edits are kept); returns new names."""
    created = []
    for spec in DEMO_AGENTS:
        fields = {k: v for k, v in spec.items() if k not in ("name", "subagents", "is_entry")}
        agent, was_created = Agent.objects.get_or_create(name=spec["name"], defaults=fields)
        if was_created:
            created.append(agent.name)
    for spec in DEMO_AGENTS:
        if spec["name"] in created:
            agent = Agent.objects.get(name=spec["name"])
            agent.allowed_subagents.set(Agent.objects.filter(name__in=spec.get("subagents", [])))
            if spec.get("is_entry") and not Agent.objects.filter(is_entry=True).exists():
                Agent.objects.filter(pk=agent.pk).update(is_entry=True)  # keep an admin's choice
                agent.is_entry = True
            agent_revision_record(agent=agent, comment="Created by seed_demo.")
    return created
