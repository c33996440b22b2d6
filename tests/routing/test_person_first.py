"""An explicit request for a person ("轉人工", "talk to a person", "I want a human", 找真人)
wins over department words: the turn asks staff (the inbox), and no expert is asked first."""

from __future__ import annotations

import pytest

from agents.knowledge.services import knowledge_base_create
from delegation.humans.models import InboxItem
from delegation.models import Run, RunStatus
from delegation.routing.decide import RoutingInput, routing_decide
from delegation.routing.rules import person_asked, person_question
from delegation.routing.seeds import routing_seed
from tests.factories import make_agent, make_user
from tests.humans.helpers import client, decide, start


@pytest.fixture
def staff(db):
    """A staff member who decides unassigned inbox items."""
    return make_user("stella", is_staff=True)


def team(*, entry_tools: list[str]):
    """An entry agent (with `entry_tools`) that may ask Finance and HR, routed by the shipped
    department rules."""
    finance = make_agent("finance", display_name="Finance", tags=["finance", "報銷", "预算"])
    hr = make_agent("hr", display_name="HR", tags=["hr", "請假"])
    entry = make_agent("assistant", is_entry=True, tool_keys=entry_tools, subagents=[finance, hr])
    return routing_seed(name="departments", entry_agents=[entry]), entry, [finance, hr]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("轉人工，我的報銷單被退回了", "轉人工"),
        ("转人工 请假", "转人工"),
        ("我想找真人問預算", "找真人"),
        ("Talk to a person about my invoice", "Talk to a person"),
        ("I want a human, the finance budget is wrong", "want a human"),
        ("Can I speak with a real person about leave?", "speak with a real person"),
        ("Ask the finance agent about the budget", None),
        ("真人秀的預算", None),
        ("human resources: how many leave days?", None),
    ],
)
def test_the_words_that_ask_for_a_person(text, words):
    assert person_asked(text) == words


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("轉人工：我的報銷單", "我的報銷單"),
        ("ask a human: may I expense a taxi?", "may I expense a taxi?"),
        ("I want a human, the budget is wrong", "I want a human, the budget is wrong"),
        ("转人工", "转人工"),
    ],
)
def test_staff_are_asked_the_question_without_the_request_words(text, question):
    assert person_question(text, person_asked(text)) == question


@pytest.mark.django_db
def test_a_request_for_a_person_wins_over_the_department_rules(user):
    policy, entry, experts = team(entry_tools=["ask_human"])
    config = {"name": "assistant", "provider": "offline", "model": "", "tool_keys": ["ask_human"]}
    given = RoutingInput(
        text="轉人工，我的報銷單被退回了", policy=policy, entry=config, targets=experts, user=user
    )
    decision = routing_decide(given)
    assert decision.ask_human and decision.target is None
    assert decision.matched_rule == "human-request" and decision.matched_keywords == ["轉人工"]
    assert decision.tools == ["ask_human"]
    plain = routing_decide(
        RoutingInput(text="我的報銷單被退回了", policy=policy, entry=config, targets=experts)
    )
    assert not plain.ask_human and plain.target == "finance"


@pytest.mark.django_db
def test_without_ask_human_the_rules_decide_and_say_why(user):
    policy, entry, experts = team(entry_tools=[])
    config = {"name": "assistant", "provider": "offline", "model": "", "tool_keys": []}
    decision = routing_decide(
        RoutingInput(text="I want a human: budget", policy=policy, entry=config, targets=experts)
    )
    assert not decision.ask_human and decision.target == "finance"
    assert any("no ask_human tool" in s for s in decision.skipped)


@pytest.mark.django_db
def test_the_policy_tester_shows_the_request_for_a_person(admin_client):
    policy, entry, experts = team(entry_tools=["ask_human"])
    url = f"/admin/routing/routingpolicy/{policy.pk}/test/"
    page = admin_client.post(url, {"message": "转人工：我要请假"}).content.decode()
    assert "human-request" in page and "staff are asked first" in page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("routed", [True, False])
def test_offline_turn_asking_for_a_person_reaches_the_staff_inbox(user, staff, settings, routed):
    settings.TASKS_RUN_SYNC = True
    policy, entry, experts = team(entry_tools=["ask_human"])
    if not routed:  # no policy at all: the request still reaches a person
        policy.delete()
    run = start(user, "轉人工，我的報銷單被退回了，請假也沒批")
    assert run.status == RunStatus.WAITING_HUMAN
    item = InboxItem.objects.get()
    assert item.audience == "staff" and item.question == "我的報銷單被退回了，請假也沒批"
    assert not Run.objects.filter(parent__isnull=False).exists()  # no expert was asked
    assert decide(client(staff), item.id, decision="approve", answer="我來處理").status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and "我來處理" in run.answer


@pytest.mark.django_db
def test_the_debug_tools_are_those_the_expert_really_has(user):
    finance = make_agent(
        "finance", display_name="Finance", tags=["finance"], tool_keys=["calculate"]
    )
    knowledge_base_create(name="fin", agents=[finance])
    policy = routing_seed(name="departments")
    config = {"name": "assistant", "provider": "offline", "model": "", "tool_keys": []}
    decision = routing_decide(
        RoutingInput(
            text="What is the travel budget?",
            policy=policy,
            entry=config,
            targets=[finance],
            user=user,
        )
    )
    assert decision.target == "finance"
    assert decision.tools == ["calculate", "kb_documents", "kb_search"]
