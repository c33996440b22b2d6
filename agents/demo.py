"""The demo team: an entry agent and specialists with real tools, created once."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.models import Agent
from agents.services import agent_revision_record

PLANNER_TEAM = ["tasks", "calendar", "weather", "reminders"]

DEMO_AGENTS: list[dict[str, Any]] = [
    {
        "name": "assistant",
        "display_name": "Assistant",
        "description": "Your general assistant: answers directly and asks experts when needed.",
        "tags": ["general", "orchestrator"],
        "system_prompt": (
            "You are a helpful assistant for the signed-in user. Use tools for facts you cannot "
            "know (the time, arithmetic, the user's earlier chats). Answer concisely.\n"
            'For plans (e.g. "pick someone up at the airport Saturday morning"): ask the Task '
            "expert to add the task, the Weather expert for that day's forecast where it "
            "happens, then the Reminder expert to schedule a reminder for the task, giving it "
            "the city. If an expert reports a conflict or asks for confirmation, ask the user."
        ),
        "tool_keys": ["current_time", "calculate", "search_my_chats"],
        "is_entry": True,
        "subagents": ["finance", "hr", "legal", "clock", "archivist", *PLANNER_TEAM],
    },
    {
        "name": "finance",
        "display_name": "Finance expert",
        "description": "Budgets, costs, prices and money questions; the Math expert computes.",
        "tags": [
            *["finance", "budget", "cost", "price", "money", "invoice", "unpaid"],
            *["財務", "财务", "预算", "營收", "發票", "发票"],
        ],
        "system_prompt": (
            "You answer money questions from the finance department's documents (search them "
            "and cite them) and its finance system (invoices, budgets), and ask the math expert "
            "for any computation. Explain the result in one or two sentences."
        ),
        # The demo's finance system (agents/mcp/demo.py), an MCP server seeded with the team.
        "tool_keys": [
            "mcp.finance-system.unpaid_invoices",
            "mcp.finance-system.budget_status",
            "mcp.finance-system.mark_invoice_paid",
        ],
        "subagents": ["math"],
    },
    {
        "name": "hr",
        "display_name": "HR expert",
        "description": "Leave, attendance and people rules, from HR's own documents (人資假勤).",
        "tags": ["hr", "leave", "vacation", "人資", "人资", "假勤", "請假", "特休"],
        "system_prompt": (
            "You answer HR questions only from HR's documents: search them, cite every rule "
            "you state, and say plainly when the documents do not cover the question."
        ),
        "tool_keys": [],
        "answer_from_knowledge_only": True,
        "subagents": [],
    },
    {
        "name": "legal",
        "display_name": "Legal expert",
        "description": "Contracts, compliance and NDAs (法務): strict answers from its documents.",
        "tags": ["legal", "contract", "compliance", "法務", "法务", "合約", "合约"],
        "system_prompt": (
            "You answer legal questions only from the legal department's documents, cited. "
            "When there is no document, say what is missing and whom to ask."
        ),
        "tool_keys": [],
        "answer_from_knowledge_only": True,
        "subagents": [],
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
    {
        "name": "tasks",
        "display_name": "Task expert",
        "description": "Adds, finds, changes, finishes and removes the user's tasks (to-dos "
        "with a date, a time or a part of the day).",
        "tags": ["task", "tasks", "todo", "to-do", "finish", "任务", "待办", "完成"],
        "system_prompt": (
            "You manage the user's tasks with your tools. Pass dates as YYYY-MM-DD or words "
            "(today, tomorrow, saturday, 周末) and times as HH:MM; the tools read them in the "
            "user's timezone. On a conflict or need_confirmation, do not retry with "
            "confirm=true unless the user already agreed: report it and ask."
        ),
        "tool_keys": ["create_task", "query_tasks", "modify_task", "finish_task", "remove_task"],
    },
    {
        "name": "calendar",
        "display_name": "Calendar expert",
        "description": "Shows the user's day in order and finds free time slots.",
        "tags": ["calendar", "schedule", "agenda", "free", "busy", "日程", "空闲", "有空"],
        "system_prompt": "You read the user's day with your tools and answer from their results.",
        "tool_keys": ["get_day_schedule", "find_free_slots"],
    },
    {
        "name": "weather",
        "display_name": "Weather expert",
        "description": "Weather forecasts for a city on a day, with advice for bad weather.",
        "tags": ["weather", "forecast", "rain", "snow", "天气", "下雨", "下雪"],
        "system_prompt": "You answer weather questions with the get_weather tool.",
        "tool_keys": ["get_weather"],
    },
    {
        "name": "reminders",
        "display_name": "Reminder expert",
        "description": "Schedules, lists and cancels reminders for the user's tasks; the time "
        "is computed from the task, and a city adds weather advice.",
        "tags": ["remind", "reminder", "reminders", "提醒"],
        "system_prompt": (
            "You schedule reminders for existing tasks with your tools. Never choose a time: "
            "the tool computes it. Pass the city when you know where the task happens."
        ),
        "tool_keys": ["schedule_reminder", "list_reminders", "cancel_reminder"],
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
        else:
            _link_new_experts(spec, created)
    return created


def _link_new_experts(spec: dict[str, Any], created: list[str]) -> None:
    """An existing demo agent gets the experts added to its spec since it was created (e.g.
    the planner team), once, when they are created; anything an admin set stays."""
    new = [name for name in spec.get("subagents", []) if name in created]
    agent = Agent.objects.filter(name=spec["name"]).first()
    if not new or agent is None:
        return
    agent.allowed_subagents.add(*Agent.objects.filter(name__in=new))
    agent_revision_record(agent=agent, comment=f"seed_demo added experts: {', '.join(new)}.")
