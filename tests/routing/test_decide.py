"""The shipped rule sets decide as the issue's table says, in Chinese and English."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from agents.models import Agent
from delegation.routing.decide import RoutingInput, routing_decide
from delegation.routing.models import Mode, RoutingRule, RuleKind
from delegation.routing.seeds import routing_seed
from tests.factories import make_agent

pytestmark = pytest.mark.django_db

ENTRY = {"name": "assistant", "provider": "offline", "model": "", "tool_keys": []}


@pytest.fixture
def experts(db) -> list[Agent]:
    return [
        make_agent("finance", display_name="Finance", tags=["finance", "財務"]),
        make_agent("hr", display_name="HR", tags=["hr", "人資"]),
        make_agent("legal", display_name="Legal", tags=["legal"]),
    ]


def decide(policy, text: str, targets, **flags):
    return routing_decide(
        RoutingInput(text=text, policy=policy, entry=ENTRY, targets=targets, **flags)
    )


SITE_TABLE = [
    # (message, mode, rule)
    ("請嚴格根據文件回答：公司有幾個部門？", Mode.STRICT, "strict-request"),
    ("只根据知识库回答", Mode.STRICT, "strict-request"),
    ("Answer KB-only please: how many offices?", Mode.STRICT, "strict-request"),
    ("帶我逛一下這個網站吧，我想了解你們", Mode.GUIDE, "guided-tour"),
    ("我是新手，推荐路线是什么？", Mode.GUIDE, "guided-tour"),
    ("Show me around, where do I start?", Mode.GUIDE, "guided-tour"),
    ("他的履歷有哪些重點經歷？", Mode.STRICT, "resume"),
    ("What certificates does she hold?", Mode.STRICT, "resume"),
    ("介紹一下這個專案的架構設計", Mode.CHAT, "projects"),
    ("這個專案在2025年的營收成長了30%嗎？", Mode.STRICT, "projects"),
    ("The project's architecture in 2024 handled 40% more load", Mode.STRICT, "projects"),
    ("Tell me about the project architecture.", Mode.CHAT, "projects"),
    ("什么是向量数据库？", Mode.CHAT, "explain"),
    ("微服務和單體的差別在哪裡？", Mode.CHAT, "explain"),
    ("Why do you use Postgres instead of MySQL here?", Mode.CHAT, "explain"),
    ("嗨", Mode.GUIDE, "vague"),
    ("help", Mode.GUIDE, "vague"),
]


@pytest.mark.parametrize(("message", "mode", "rule"), SITE_TABLE)
def test_the_site_assistant_rules(message, mode, rule, experts):
    decision = decide(routing_seed(name="site-assistant"), message, experts)
    assert (decision.mode, decision.matched_rule) == (mode, rule)
    assert decision.reason and decision.policy == "site-assistant"


def test_numbers_escalate_only_in_the_sentence_that_names_the_intent(experts):
    policy = routing_seed(name="site-assistant")
    calm = decide(policy, "Describe the project architecture. I have 3 questions later.", experts)
    assert calm.mode == Mode.CHAT
    loud = decide(policy, "Describe the project architecture of the 3 services.", experts)
    assert loud.mode == Mode.STRICT and "STRICT" in loud.reason


DEPARTMENT_TABLE = [
    (
        "財務部第三季營收是多少？",
        "finance",
        Mode.STRICT,
    ),  # a number word: 第三季 → 三季? no: 營收 + 多少
    ("请问报销流程怎么走", "finance", Mode.CHAT),
    ("What is our travel budget policy?", "finance", Mode.CHAT),
    ("人資的特休規定", "hr", Mode.CHAT),
    ("How many sick leave days do I get?", "hr", Mode.CHAT),
    ("這份合約的保密條款", "legal", Mode.STRICT),
]


@pytest.mark.parametrize(("message", "target", "mode"), DEPARTMENT_TABLE)
def test_the_department_rules_route_to_their_experts(message, target, mode, experts):
    decision = decide(routing_seed(name="departments"), message, experts)
    assert decision.target == target and decision.mode == mode


def test_overrides_beat_intents_and_keep_the_intents_expert(experts):
    decision = decide(routing_seed(name="departments"), "嚴格根據文件：人資的特休規定", experts)
    assert decision.mode == Mode.STRICT and decision.target == "hr"
    assert decision.matched_rule == "strict-request + hr"


def test_request_flags_beat_every_rule(experts):
    policy = routing_seed(name="site-assistant")
    assert decide(policy, "嗨", experts, force_strict=True).mode == Mode.STRICT
    guided = decide(policy, "他的履歷有哪些重點？", experts, force_guide=True)
    assert guided.mode == Mode.GUIDE and guided.matched_rule.startswith("force_guide")


def test_a_rule_whose_expert_is_out_of_reach_is_passed_over_for_the_next(experts):
    policy = routing_seed(name="departments")
    Agent.objects.filter(name="hr").update(access_group=Group.objects.create(name="hr-only"))
    RoutingRule.objects.create(
        policy=policy,
        kind=RuleKind.INTENT,
        order=99,
        name="leave-fallback",
        keywords="特休",
        mode=Mode.CHAT,
        reason="Leave questions the HR expert cannot take.",
    )
    usable = [a for a in experts if a.name != "hr"]  # this user may not use HR
    decision = decide(policy, "特休有幾天？", usable)
    assert decision.matched_rule == "leave-fallback" and decision.target is None
    assert decision.skipped == ["hr: HR is disabled or not available to this user"]


def test_no_policy_means_no_mode_rules_and_the_entry_agent_decides(experts):
    decision = decide(None, "財務報告", experts)
    assert decision.policy is None and decision.target is None
    assert decision.reason.startswith("No routing policy")


def test_the_offline_router_routes_by_tags_for_what_no_rule_decides(experts):
    policy = routing_seed(name="site-assistant")  # no rule names finance
    decision = decide(policy, "Please ask Finance about the quarterly numbers here", experts)
    assert decision.target == "finance" and not decision.fallback_used
    assert "offline" in decision.reason
