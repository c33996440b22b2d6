"""The memory dialog's data: in the page's language, experts by the names people read there,
never a rule's or an agent's identifier."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from agents.demo import seed_demo_agents
from chat.models import ChatSession
from delegation.routing.memory import memory_shown
from delegation.routing.models import SessionMemory

pytestmark = pytest.mark.django_db

REMEMBERED = {
    "last_intent": "strict-request + hr",
    "last_mode": "STRICT",
    "last_expert": "hr",
    "interested_topics": ["请假", "sick leave"],
    "visited_docs": [{"document_id": 7, "title": "人資假勤規定"}],
}
SLUGS = ("strict-request", '"hr"', "STRICT", "last_expert")


def memory_page(user, accept_language: str) -> tuple[dict, str]:
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user)
    SessionMemory.objects.create(session=session, user=user, data=REMEMBERED)
    client = Client(HTTP_ACCEPT_LANGUAGE=accept_language)
    client.force_login(user)
    answer = client.get(f"/api/v1/sessions/{session.id}/memory/")
    assert answer.status_code == 200
    return answer.json(), answer.content.decode()


@pytest.mark.parametrize(
    ("accept_language", "expert", "topic"),
    [("zh-TW", "人資專家", "請假"), ("zh-CN", "人资专家", "请假"), ("en", "HR expert", "请假")],
)
def test_the_dialog_names_the_expert_in_the_pages_language(user, accept_language, expert, topic):
    seed_demo_agents()
    shown, raw = memory_page(user, accept_language)
    assert shown["last_intent"] == expert
    assert shown["interested_topics"][0] == topic  # Chinese topics in the page's script
    assert shown["visited_docs"] == [{"document_id": 7, "title": "人資假勤規定"}]
    for slug in SLUGS:
        assert slug not in raw, (slug, raw)


def test_without_an_expert_the_mode_is_said_in_words():
    shown = memory_shown(data={"last_intent": "resume", "last_mode": "STRICT"}, language="en")
    assert shown["last_intent"] == "Strict answers from documents, with sources"


def test_an_older_memory_finds_its_expert_among_the_rule_names():
    seed_demo_agents()
    shown = memory_shown(data={"last_intent": "finance"}, language="zh-hant")
    assert shown["last_intent"] == "財務專家"


def test_a_rule_name_alone_is_never_shown():
    assert memory_shown(data={"last_intent": "vague"}, language="en")["last_intent"] is None
