"""The demo suites (loaded by seed_demo): the planner team and the department assistant, with
expectations the built-in offline model meets (rubrics are judged once a judge model is set)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.models import Agent
from delegation.evals.models import EvalSuite
from delegation.evals.services import case_save, groups_named, suite_save

REFUSAL = (
    "Politely declines to tell a joke (it is not what this assistant is for) and says what it "
    "can help with instead, without calling any tool."
)
NO_ACCESS = r"(?i)may not|no access|not allowed|permission|權限|权限|无权|無權"

# (name, message, user's groups, expectations)
PLANNER: list[tuple[str, str, list[str], dict[str, Any]]] = [
    (
        "create a task",
        "创建任务明天去买菜",
        [],
        {
            "experts": {"names": ["tasks"], "match": "includes"},
            "tools_called": ["create_task"],
            "tool_arguments": [{"tool": "create_task", "arguments": {"date": "明天"}}],
        },
    ),
    (
        "finish, not create",
        "完成写周报",
        [],
        {"tools_called": ["finish_task"], "tools_not_called": ["create_task"]},
    ),
    (
        "free time",
        "明天下午有空吗",
        [],
        {
            "experts": {"names": ["calendar"], "match": "includes"},
            "tools_called": ["find_free_slots"],
        },
    ),
    (
        "weather",
        "明天天气怎么样",
        [],
        {"experts": {"names": ["weather"], "match": "includes"}, "tools_called": ["get_weather"]},
    ),
    (
        "airport plan",
        "周末早上去机场接人",
        [],
        {
            "experts": {"names": ["tasks", "weather", "reminders"], "match": "includes"},
            "tools_called": ["create_task", "get_weather", "schedule_reminder"],
        },
    ),
    ("no joke", "给我讲个笑话", [], {"no_tools": True, "rubric": REFUSAL}),
]

DEPARTMENTS: list[tuple[str, str, list[str], dict[str, Any]]] = [
    (
        "finance: newest document, cited",
        "財務部最新的檔案是什麼",
        ["finance"],
        {
            "mode": "CHAT",
            "experts": {"names": ["finance"], "match": "set"},
            "cited_documents": ["2026年第三季財務報告"],
            "answer_contains": ["2026年第三季財務報告"],
        },
    ),
    (
        "HR: annual leave, cited",
        "人資規定特休有幾天",
        [],
        {
            "experts": {"names": ["hr"], "match": "set"},
            "cited_documents": ["人資假勤規定"],
            "answer_contains": ["特休"],
        },
    ),
    (
        "finance without finance rights: refused",
        "財務部最新的檔案是什麼",
        [],
        {
            "answer_regex": NO_ACCESS,
            "answer_not_contains": ["2026年第三季財務報告"],
            "rubric": "Tells the user plainly that they do not have access to the finance "
            "documents, without revealing any of their content.",
        },
    ),
]

SUITES = {
    "planner": (
        "The planner team: tasks, calendar, weather and reminders, reached through the "
        "assistant. The airport plan asks three experts in order (the offline model knows this "
        "one plan; a real model makes it up).",
        100,
        PLANNER,
    ),
    "departments": (
        "Department questions routed to the finance and HR experts and answered with "
        "citations; a user without finance rights is refused.",
        100,
        DEPARTMENTS,
    ),
}


@transaction.atomic
def evals_seed_demo(*, agent_name: str = "assistant") -> list[str]:
    """Create the demo suites that do not exist yet, for the demo's entry agent (admins' edits
    are kept); returns the names created."""
    agent = Agent.objects.filter(name=agent_name).first()
    if agent is None:
        return []
    created = []
    for name, (description, threshold, cases) in SUITES.items():
        if EvalSuite.objects.filter(name=name).exists():
            continue
        suite = suite_save(
            suite=None,
            data={
                "name": name,
                "description": description,
                "agent": agent,
                "pass_threshold": threshold,
            },
        )
        for order, (case_name, message, groups, expect) in enumerate(cases):
            case_save(
                case=None,
                data={
                    "suite": suite,
                    "name": case_name,
                    "order": order,
                    "message": message,
                    "user_groups": groups_named(groups),
                    "expect": expect,
                },
            )
        created.append(name)
    return created
