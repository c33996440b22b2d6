"""The two rule sets that ship as data: department routing (finance, HR, legal) and the site
assistant's; each in Chinese (both scripts match) and English. And the demo's statistics."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.db import transaction

from agents.models import Agent
from delegation.routing.models import Mode, RoutingPolicy, RoutingRule, RoutingStat, RuleKind
from delegation.routing.revisions import policy_revision_record

# (name, keywords, mode, options) — overrides force a mode whatever the intent.
OVERRIDES: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "strict-request",
        "嚴格, 严格, 只根據, 只根据, 不要猜, 引用, 來源, 来源, strict, KB-only, only from the "
        "knowledge base, cite, sources, don't guess",
        Mode.STRICT,
        {"reason": "The user asked for answers strictly from our documents, with sources."},
    ),
    (
        "guided-tour",
        "帶我逛, 带我逛, 導覽, 导览, 新手, 推薦路線, 推荐路线, 第一次來, 第一次来, where do I "
        "start, show me around, guided tour, I'm new",
        Mode.GUIDE,
        {"reason": "The user asked to be shown around."},
    ),
]

SITE_INTENTS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "resume",
        "履歷, 履历, 簡歷, 简历, 經歷, 经历, 經驗, 经验, 證照, 证照, 證書, 证书, KPI, 年資, 年资, "
        "résumé, resume, CV, experience, certificate, certification, years",
        Mode.STRICT,
        {"reason": "Questions about résumé, experience, certificates or years need sources."},
    ),
    (
        "projects",
        "專案, 专案, 項目, 项目, 架構, 架构, project, projects, architecture",
        Mode.CHAT,
        {"strict_on_numbers": True, "reason": ""},
    ),
    (
        "explain",
        "什麼是, 什么是, 差別, 差别, 區別, 区别, 為什麼, 为什么, what is, difference, why, compare",
        Mode.CHAT,
        {"reason": "An explanation or comparison."},
    ),
    ("vague", "", Mode.GUIDE, {"max_chars": 6, "reason": "A short, vague message: orient first."}),
]

DEPARTMENT_INTENTS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "finance",
        "財務, 财务, 營收, 营收, 預算, 预算, 報銷, 报销, 費用, 费用, 報告, 报告, finance, "
        "revenue, budget, expense, reimbursement, invoice",
        Mode.CHAT,
        {"target": "finance", "strict_on_numbers": True, "reason": ""},
    ),
    (
        "hr",
        "人資, 人资, 人事, 假勤, 請假, 请假, 特休, 病假, 事假, 薪資, 薪资, HR, leave, vacation, "
        "sick leave, payroll, holiday",
        Mode.CHAT,
        {"target": "hr", "reason": ""},
    ),
    (
        "legal",
        "法務, 法务, 合約, 合约, 契約, 契约, 合規, 合规, legal, contract, compliance, NDA",
        Mode.STRICT,
        {"target": "legal", "reason": "Legal questions are answered strictly from documents."},
    ),
]

POLICIES = {
    "departments": (
        "Department routing: finance, HR and legal questions go to their experts; requests for "
        "strict answers or a tour override the mode.",
        DEPARTMENT_INTENTS,
    ),
    "site-assistant": (
        "A site assistant: résumé and experience questions are STRICT, projects CHAT (STRICT "
        "with numbers), explanations CHAT, short vague messages GUIDE.",
        SITE_INTENTS,
    ),
}


@transaction.atomic
def routing_seed(*, name: str, entry_agents: list[Agent] = ()) -> RoutingPolicy:
    """Create (or reset) one of the shipped policies, with the overrides and its intents."""
    description, intents = POLICIES[name]
    policy, _ = RoutingPolicy.objects.update_or_create(
        name=name, defaults={"description": description}
    )
    policy.rules.all().delete()
    for kind, table in ((RuleKind.OVERRIDE, OVERRIDES), (RuleKind.INTENT, intents)):
        for order, (rule_name, keywords, mode, options) in enumerate(table):
            target = options.get("target")
            RoutingRule.objects.create(
                policy=policy,
                kind=kind,
                order=order,
                name=rule_name,
                keywords=keywords,
                mode=mode,
                max_chars=options.get("max_chars"),
                strict_on_numbers=options.get("strict_on_numbers", False),
                reason=options.get("reason", ""),
                target=Agent.objects.filter(name=target).first() if target else None,
            )
    if entry_agents:
        policy.entry_agents.set(entry_agents)
    policy_revision_record(policy=policy, comment="shipped rule set")
    return policy


# The demo's figures: (expert, intent, delegations, validated, failed, rated up, rated down) per
# day over the last DEMO_DAYS days, so the statistics page, its charts and the figures a
# decision records show something offline. HR does well on HR questions and badly on finance.
DEMO_FIGURES: list[tuple[str, str, int, int, int, int, int]] = [
    ("hr", "hr", 2, 2, 0, 1, 0),
    ("hr", "finance", 1, 0, 1, 0, 1),
    ("finance", "finance", 2, 2, 0, 1, 0),
    ("legal", "legal", 1, 1, 0, 0, 0),
    ("math", "none", 1, 1, 0, 0, 0),
    ("translator", "none", 1, 0, 0, 1, 0),
]
DEMO_DAYS = 14


@transaction.atomic
def routing_seed_demo_stats(*, entry: str, today: date) -> int:
    """The demo's statistics for `entry` (once: none are added where it has some); how many
    rows were written. Every third day is quieter, so the charts are not flat."""
    if RoutingStat.objects.filter(entry=entry).exists():
        return 0
    rows = []
    for back in range(DEMO_DAYS):
        day = today - timedelta(days=back)
        for expert, intent, count, passed, failed, up, down in DEMO_FIGURES:
            quiet = back % 3 == 2
            rows.append(
                RoutingStat(
                    entry=entry,
                    expert=expert,
                    intent=intent,
                    day=day,
                    delegations=count + (0 if quiet else 1),
                    succeeded=count + (0 if quiet else 1),
                    validation_passed=passed,
                    validation_failed=failed + (1 if expert == "hr" and back % 4 == 0 else 0),
                    rated_up=up,
                    rated_down=down,
                    fell_back=1 if expert == "hr" and intent == "finance" and quiet else 0,
                )
            )
    RoutingStat.objects.bulk_create(rows)
    return len(rows)
