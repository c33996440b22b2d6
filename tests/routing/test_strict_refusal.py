"""The STRICT refusal names what is missing, where it looked, in the run's language: the topic,
never the whole question with the word that asked for strictness."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from agents.knowledge.services import document_upload, knowledge_base_create
from agents.models import Agent
from delegation.models import Run
from delegation.routing.models import Mode
from delegation.routing.rules import keywords_of
from delegation.routing.seeds import OVERRIDES
from delegation.steps.strict import refusal_topic
from tests.delegation.test_run_endings import turn_events
from tests.fake_openai import text, tool_call
from tests.routing.test_turns import team_with_policy

OVERRIDE_WORDS = [w for _name, words, _mode, _options in OVERRIDES for w in keywords_of(words)]


@pytest.mark.parametrize(
    ("asked", "topic"),
    [
        ("STRICT: 第三季預算是多少？", "第三季預算"),
        ("請嚴格根據文件回答：公司有幾個部門？", "公司有幾個部門"),
        ("严格 第三季预算", "第三季预算"),
        ("strict: what is the Q3 budget?", "the Q3 budget"),
        ("cite sources: travel policy", "travel policy"),
        ("Is the district office open?", "Is the district office open"),
        ("board salary", "board salary"),
    ],
)
def test_the_topic_leaves_out_the_override_words_and_the_framing(asked, topic):
    assert refusal_topic(asked, OVERRIDE_WORDS) == topic


def setup_finance_knowledge() -> None:
    team_with_policy()
    kb = knowledge_base_create(
        name="fin", display_name="Finance documents", agents=[Agent.objects.get(name="finance")]
    )
    document_upload(
        kb=kb,
        filename="a.md",
        data=b"# Travel\n\nTrain tickets are refunded.",
        title="Travel policy",
        background=False,
    )


@pytest.mark.django_db(transaction=True)
async def test_the_refusal_names_the_knowledge_and_the_topic_not_the_strict_word(user, team):
    await database_sync_to_async(setup_finance_knowledge)()
    asked = "STRICT: finance, what is the Q3 travel budget?"
    team.script("finance", tool_call("kb_search", {"query": asked}), text("It is 5M."))
    team.script("boss", text("It is 5M."))
    events = await turn_events(user, asked)
    root = await database_sync_to_async(Run.objects.get)(depth=0)
    assert root.routing["mode"] == Mode.STRICT
    answer = [e["data"]["text"] for e in events if e["type"] == "message.completed"][-1]
    assert answer.startswith("I found nothing in Finance documents about “")
    assert "STRICT" not in answer and "strict" not in answer.lower() and "5M" not in answer
    assert "Q3 travel budget" in answer


@pytest.mark.django_db(transaction=True)
async def test_a_chinese_refusal_keeps_the_topic_in_the_users_words(user, team):
    await database_sync_to_async(setup_finance_knowledge)()
    asked = "嚴格：財務的第三季預算是多少？"
    team.script("finance", tool_call("kb_search", {"query": asked}), text("五百萬"))
    team.script("boss", text("五百萬"))
    events = await turn_events(user, asked)
    answer = [e["data"]["text"] for e in events if e["type"] == "message.completed"][-1]
    assert "財務的第三季預算" in answer and "Finance documents" in answer
    assert "嚴格" not in answer and "是多少" not in answer and "五百萬" not in answer
