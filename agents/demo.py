"""The demo team: an entry agent and specialists with real tools, created once."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from agents.models import Agent
from agents.services import agent_revision_record

PLANNER_TEAM = ["tasks", "calendar", "weather", "reminders"]
TRANSLATOR_PATH = "/demo/a2a/translator/"  # where the demo serves its remote (A2A) agent

DEMO_AGENTS: list[dict[str, Any]] = [
    {
        "name": "assistant",
        "display_name": "Assistant",
        "description": "Your general assistant: answers directly and asks experts when needed.",
        "display_names": {"en": "Assistant", "zh-hant": "助理", "zh-hans": "助理"},
        "descriptions": {
            "en": "Your general assistant: answers directly and asks experts when needed.",
            "zh-hant": "你的萬用助理：直接回答，需要時請專家協助。",
            "zh-hans": "你的万用助理：直接回答，需要时请专家协助。",
        },
        "tags": ["general", "orchestrator"],
        "system_prompt": (
            "You are a helpful assistant for the signed-in user. Use tools for facts you cannot "
            "know (the time, arithmetic, the user's earlier chats). Answer concisely.\n"
            'For plans (e.g. "pick someone up at the airport Saturday morning"): ask the Task '
            "expert to add the task, the Weather expert for that day's forecast where it "
            "happens, then the Reminder expert to schedule a reminder for the task, giving it "
            "the city. If an expert reports a conflict or asks for confirmation, ask the user."
        ),
        "tool_keys": [
            *["current_time", "calculate", "search_my_chats", "ask_human"],
            "schedule_prompt",  # "每週一早上請財務 Agent 生成週報告" (reminders.tools.schedules)
        ],
        "is_entry": True,
        "a2a_enabled": True,
        "subagents": ["finance", "hr", "legal", "clock", "archivist", "translator", *PLANNER_TEAM],
    },
    {
        "name": "finance",
        "display_name": "Finance expert",
        "description": "Budgets, costs, prices and money questions; the Math expert computes.",
        "display_names": {"en": "Finance expert", "zh-hant": "財務專家", "zh-hans": "财务专家"},
        "descriptions": {
            "en": "Budgets, costs, prices and money questions; the Math expert computes.",
            "zh-hant": "預算、成本、價格與金錢問題；計算交給數學專家。",
            "zh-hans": "预算、成本、价格与金钱问题；计算交给数学专家。",
        },
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
        "display_names": {"en": "HR expert", "zh-hant": "人資專家", "zh-hans": "人资专家"},
        "descriptions": {
            "en": "Leave, attendance and people rules, from HR's own documents (人資假勤).",
            "zh-hant": "請假、出勤與人事規定，依人資自己的文件回答。",
            "zh-hans": "请假、出勤与人事规定，依人资自己的文件回答。",
        },
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
        "display_names": {"en": "Legal expert", "zh-hant": "法務專家", "zh-hans": "法务专家"},
        "descriptions": {
            "en": "Contracts, compliance and NDAs (法務): strict answers from its documents.",
            "zh-hant": "合約、法規遵循與保密協議：只依文件嚴格回答。",
            "zh-hans": "合约、法规遵循与保密协议：只依文件严格回答。",
        },
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
        "display_names": {"en": "Math expert", "zh-hant": "數學專家", "zh-hans": "数学专家"},
        "descriptions": {
            "en": "Exact arithmetic: totals, percentages, unit prices, budgets.",
            "zh-hant": "精確計算：總額、百分比、單價與預算。",
            "zh-hans": "精确计算：总额、百分比、单价与预算。",
        },
        "tags": ["math", "arithmetic", "calculation", "计算"],
        "system_prompt": "You compute exactly with the calculate tool and show the expression.",
        "tool_keys": ["calculate"],
    },
    {
        "name": "clock",
        "display_name": "Time expert",
        "description": "The current date, time and weekday in any timezone.",
        "display_names": {"en": "Time expert", "zh-hant": "時間專家", "zh-hans": "时间专家"},
        "descriptions": {
            "en": "The current date, time and weekday in any timezone.",
            "zh-hant": "任何時區的目前日期、時間與星期。",
            "zh-hans": "任何时区的当前日期、时间与星期。",
        },
        "tags": ["time", "date", "timezone", "时间", "日期"],
        "system_prompt": "You tell the current date and time using the current_time tool.",
        "tool_keys": ["current_time"],
    },
    {
        # Another platform's agent, reached over A2A: the demo serves it in the same process
        # (chat/interop/demo_translator.py at TRANSLATOR_PATH of DEMO_SITE_URL).
        "name": "translator",
        "display_name": "Translator",
        "description": "Another platform's agent (A2A): converts Chinese between 繁體 and 简体.",
        "display_names": {"en": "Translator", "zh-hant": "翻譯員", "zh-hans": "翻译员"},
        "descriptions": {
            "en": "Another platform's agent (A2A): converts Chinese between 繁體 and 简体.",
            "zh-hant": "其他平台的助理（A2A）：在繁體與簡體中文之間轉換。",
            "zh-hans": "其他平台的助理（A2A）：在繁体与简体中文之间转换。",
        },
        "tags": ["translate", "翻譯", "翻译", "繁體", "简体"],
        "provider": "a2a",
        "system_prompt": "A remote agent: its own platform holds its prompt.",
        "tool_keys": ["ask_user"],  # its questions ("into which language?") go to the user
    },
    {
        "name": "archivist",
        "display_name": "Chat archivist",
        "description": "Finds what the user said or was told in earlier chats.",
        "display_names": {"en": "Chat archivist", "zh-hant": "對話檔案員", "zh-hans": "对话档案员"},
        "descriptions": {
            "en": "Finds what the user said or was told in earlier chats.",
            "zh-hant": "找出你在先前對話中說過或聽過的內容。",
            "zh-hans": "找出你在先前对话中说过或听过的内容。",
        },
        "tags": ["history", "search", "memory", "记录"],
        "system_prompt": "You search the user's earlier chats and quote what you find.",
        "tool_keys": ["search_my_chats"],
    },
    {
        "name": "tasks",
        "display_name": "Task expert",
        "description": "Adds, finds, changes, finishes and removes the user's tasks (to-dos "
        "with a date, a time or a part of the day).",
        "display_names": {"en": "Task expert", "zh-hant": "待辦專家", "zh-hans": "待办专家"},
        "descriptions": {
            "en": "Adds, finds, changes, finishes and removes your tasks (to-dos with a date, a "
            "time or a part of the day).",
            "zh-hant": "新增、查詢、修改、完成與刪除你的待辦事項（可附日期、時間或時段）。",
            "zh-hans": "新增、查询、修改、完成与删除你的待办事项（可附日期、时间或时段）。",
        },
        "tags": ["task", "tasks", "todo", "to-do", "finish", "任务", "待办", "完成"],
        "system_prompt": (
            "You manage the user's tasks with your tools. Pass dates as YYYY-MM-DD or words "
            "(today, tomorrow, saturday, 周末) and times as HH:MM; the tools read them in the "
            "user's timezone. A clash or a past time is put to the user by the tool itself "
            "(buttons); report what they chose."
        ),
        "tool_keys": ["create_task", "query_tasks", "modify_task", "finish_task", "remove_task"],
    },
    {
        "name": "calendar",
        "display_name": "Calendar expert",
        "description": "Shows the user's day in order and finds free time slots.",
        "display_names": {"en": "Calendar expert", "zh-hant": "行事曆專家", "zh-hans": "日程专家"},
        "descriptions": {
            "en": "Shows the user's day in order and finds free time slots.",
            "zh-hant": "依序列出你一天的行程，並找出空檔。",
            "zh-hans": "依序列出你一天的日程，并找出空档。",
        },
        "tags": ["calendar", "schedule", "agenda", "free", "busy", "日程", "空闲", "有空"],
        "system_prompt": "You read the user's day with your tools and answer from their results.",
        "tool_keys": ["get_day_schedule", "find_free_slots"],
    },
    {
        "name": "weather",
        "display_name": "Weather expert",
        "description": "Weather forecasts for a city on a day, with advice for bad weather.",
        "display_names": {"en": "Weather expert", "zh-hant": "天氣專家", "zh-hans": "天气专家"},
        "descriptions": {
            "en": "Weather forecasts for a city on a day, with advice for bad weather.",
            "zh-hant": "某城市某天的天氣預報，遇壞天氣附上建議。",
            "zh-hans": "某城市某天的天气预报，遇坏天气附上建议。",
        },
        "tags": ["weather", "forecast", "rain", "snow", "天气", "下雨", "下雪"],
        "system_prompt": "You answer weather questions with the get_weather tool.",
        "tool_keys": ["get_weather"],
    },
    {
        "name": "reminders",
        "display_name": "Reminder expert",
        "description": "Schedules, lists and cancels reminders for the user's tasks; the time "
        "is computed from the task, and a city adds weather advice.",
        "display_names": {"en": "Reminder expert", "zh-hant": "提醒專家", "zh-hans": "提醒专家"},
        "descriptions": {
            "en": "Schedules, lists and cancels reminders for your tasks; the time is computed "
            "from the task, and a city adds weather advice.",
            "zh-hant": "為你的待辦安排、列出與取消提醒；時間依待辦計算，給城市會附天氣建議。",
            "zh-hans": "为你的待办安排、列出与取消提醒；时间依待办计算，给城市会附天气建议。",
        },
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
        if spec.get("provider") == "a2a":  # the demo's remote agent, where this server is
            fields["base_url"] = settings.DEMO_SITE_URL.rstrip("/") + TRANSLATOR_PATH
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
            _add_names_per_language(spec)
    return created


def _add_names_per_language(spec: dict[str, Any]) -> None:
    """An existing demo agent with no names or descriptions per language gets the spec's, once
    (a demo made before they existed shows them too); ones an admin set stay."""
    agent = Agent.objects.filter(name=spec["name"]).first()
    if agent is None or agent.display_names or agent.descriptions:
        return
    agent.display_names, agent.descriptions = spec["display_names"], spec["descriptions"]
    agent.save(update_fields=["display_names", "descriptions"])
    agent_revision_record(agent=agent, comment="seed_demo added names per language.")


def _link_new_experts(spec: dict[str, Any], created: list[str]) -> None:
    """An existing demo agent gets the experts added to its spec since it was created (e.g.
    the planner team), once, when they are created; anything an admin set stays."""
    new = [name for name in spec.get("subagents", []) if name in created]
    agent = Agent.objects.filter(name=spec["name"]).first()
    if not new or agent is None:
        return
    agent.allowed_subagents.add(*Agent.objects.filter(name__in=new))
    agent_revision_record(agent=agent, comment=f"seed_demo added experts: {', '.join(new)}.")
