"""A turn names its experts and knowledge bases as its user reads them: a Traditional Chinese
question shows 財務專家 and 財務文件 (converted from the Simplified names when only those exist)
in the expert steps and citations, an English one the English names; never the other's."""

from __future__ import annotations

import json

import pytest
from django.utils import translation
from django.utils.translation import gettext

from agents.knowledge.services import document_upload, knowledge_base_create
from agents.models import Agent
from chat.models import ChatMessage
from delegation.models import Run
from tests.delegation.conftest import make_team
from tests.delegation.test_ask_checks_now import ask
from tests.delegation.test_runner import start_run
from tests.delegation.test_tool_summaries import turn
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = {"zh-hant": "財務的預算規定是什麼？", "en": "What is the finance budget rule?"}
EXPERT = {"zh-hant": "財務專家", "en": "Finance expert"}
KNOWLEDGE = {"zh-hant": "財務文件", "en": "Finance documents"}


@pytest.fixture
def team(db, settings, django_capture_on_commit_callbacks):
    """An entry agent that asks a finance expert; the expert's name and its knowledge base's
    are given in Simplified Chinese and English only (a Traditional turn converts them)."""
    settings.TASKS_RUN_SYNC = True  # the document is indexed at once
    finance = make_agent(
        "finance",
        display_name="Finance",
        display_names={"zh-hans": "财务专家", "en": "Finance expert"},
        tags=["財務", "财务", "finance"],
    )
    knowledge = knowledge_base_create(
        name="finance-docs",
        display_name="finance-docs",
        display_names={"zh-hans": "财务文件", "en": "Finance documents"},
        agents=[finance],
    )
    rules = (
        "# 預算\n\n財務的預算規定：每個部門每季五十萬元。\n\n"
        "The finance budget rule: each department gets 500,000 a quarter."
    )
    with django_capture_on_commit_callbacks(execute=True):
        document_upload(kb=knowledge, filename="budget.md", data=rules.encode(), title="預算規定")
    settings.TASKS_RUN_SYNC = False  # turns run as the page's do: events stream to the socket
    make_agent("assistant", display_name="Assistant", is_entry=True, subagents=[finance])


@pytest.mark.parametrize("language", ["zh-hant", "en"])
async def test_expert_steps_name_the_expert_in_the_turns_language(user, team, language):
    events = await turn(user, QUESTIONS[language])
    started = next(e for e in events if e["type"] == "delegation.started")
    completed = next(e for e in events if e["type"] == "delegation.completed")
    expert = EXPERT[language]
    # Words of the other languages' names (Simplified, English or Traditional).
    foreign = ["财务", "Finance"] if language == "zh-hant" else ["財務", "财务"]
    assert started["data"]["display_name"] == expert
    with translation.override(language):
        assert started["data"]["summary"] == gettext("Asking %(expert)s…") % {"expert": expert}
        answered = gettext("%(expert)s answered") % {"expert": expert}
    assert completed["data"]["status"] == "succeeded"
    assert completed["data"]["summary"] == answered
    for shown in (started["data"]["summary"], completed["data"]["summary"]):
        assert not [word for word in foreign if word in shown], shown
    # The saved delegation message (a reload) reads the same.
    saved = await ChatMessage.objects.filter(tool__name="delegate").afirst()
    assert saved.tool["summary"] == answered and saved.tool["delegation"]["display_name"] == expert


@pytest.mark.parametrize("language", ["zh-hant", "en"])
async def test_citations_name_their_knowledge_base_in_the_turns_language(user, team, language):
    events = await turn(user, QUESTIONS[language])
    answers = [
        e for e in events if e["type"] == "message.completed" and (e["data"].get("citations") or [])
    ]
    assert answers, "the answer cites the finance documents"
    root = answers[-1]
    assert root["agent"]["depth"] == 0  # the entry agent's answer carries its expert's sources
    for citation in [c for e in answers for c in e["data"]["citations"]]:
        assert citation["kb"] == "finance-docs"
        assert citation["kb_name"] == KNOWLEDGE[language]
    result = next(
        e for e in events if e["type"] == "tool.result" and e["data"]["name"] == "kb_search"
    )
    passage = result["data"]["result"]["passages"][0]
    assert passage["kb_name"] == KNOWLEDGE[language]
    assert KNOWLEDGE[language] in result["data"]["summary"]


def test_a_refused_expert_is_named_in_the_callers_language(user, db):
    agents = make_team(lead=["finance"], finance=[])
    Agent.objects.filter(name="finance").update(display_names={"zh-hans": "财务专家"})
    run = start_run(user, agents["lead"])
    Run.objects.filter(pk=run.pk).update(language="zh-hant")
    run = Run.objects.select_related("user", "root").get(pk=run.pk)
    Agent.objects.filter(name="finance").update(enabled=False)  # disabled since it was offered

    refusal = json.loads(ask(run) or "{}")["error"]["message"]

    assert "財務專家" in refusal and "Finance" not in refusal
    saved = ChatMessage.objects.get(tool__name="delegate").tool
    assert saved["delegation"]["display_name"] == "財務專家"
    with translation.override("zh-hant"):
        assert saved["summary"] == gettext("Could not ask %(expert)s") % {"expert": "財務專家"}
