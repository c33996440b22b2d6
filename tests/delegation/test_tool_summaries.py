"""Every tool call and expert step reaches people as a sentence in the turn's language and
script (`summary` in the events and on the saved tool messages), the raw call kept beside it."""

from __future__ import annotations

import re

import pytest
from channels.db import database_sync_to_async
from django.utils import translation
from django.utils.translation import gettext

from agents.knowledge.services import document_upload, knowledge_base_create
from chat.models import ChatMessage
from tests.chat.helpers import connect, send_frame
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)

# Characters written differently in Simplified than in Traditional (a zh-hant text has none).
SIMPLIFIED = re.compile("[资财务规定请发现话这说时间门间书学库为会]")
QUESTIONS = {
    "en": "What is the leave policy for sick leave?",
    "zh-hant": "人資的請假規定是什麼？",
    "zh-hans": "人资的请假规定是什么？",
}


async def turn(user, words: str) -> list[dict]:
    """Send one message and collect events until the turn ends."""
    ws = await connect(user)
    await ws.send_json_to(send_frame(words))
    events = []
    while not (
        events and events[-1]["type"] == "run.completed" and events[-1]["agent"]["depth"] == 0
    ):
        events.append(await ws.receive_json_from(timeout=15))
    await ws.disconnect()
    return events


@pytest.fixture
def team(db, settings, django_capture_on_commit_callbacks):
    """An entry agent that asks an HR expert, whose knowledge base has a Simplified name."""
    settings.TASKS_RUN_SYNC = True  # the document is indexed at once
    hr = make_agent("hr", display_name="HR", tags=["人資", "人资", "leave"])
    knowledge = knowledge_base_create(name="hr", display_name="人资知识库", agents=[hr])
    rules = "# 請假\n\n病假每年三十天，請假規定如下。\n\nThe sick leave policy: 30 days a year."
    with django_capture_on_commit_callbacks(execute=True):
        document_upload(kb=knowledge, filename="leave.md", data=rules.encode(), title="請假規定")
    settings.TASKS_RUN_SYNC = False  # turns run as the page's do: events stream to the socket
    make_agent("assistant", display_name="Assistant", is_entry=True, subagents=[hr])


@pytest.mark.parametrize("language", ["en", "zh-hant", "zh-hans"])
async def test_tool_and_expert_events_carry_a_summary_in_the_turns_language(user, team, language):
    events = await turn(user, QUESTIONS[language])
    called = next(
        e for e in events if e["type"] == "tool.called" and e["data"]["name"] == "kb_search"
    )
    result = next(
        e for e in events if e["type"] == "tool.result" and e["data"]["name"] == "kb_search"
    )
    started = next(e for e in events if e["type"] == "delegation.started")
    completed = next(e for e in events if e["type"] == "delegation.completed")
    # The raw call stays; people read the sentence.
    assert result["data"]["arguments"]["query"] and result["data"]["result"]["passages"]
    summary = result["data"]["summary"]
    assert "kb_search" not in summary and "{" not in summary
    count = len(result["data"]["result"]["passages"])
    with translation.override(language):
        assert called["data"]["summary"] == gettext("%(tool)s…") % {
            "tool": gettext("Search documents")
        }
        assert str(count) in summary
    if language == "zh-hant":  # the Simplified name of the knowledge base, in Traditional
        assert "人資知識庫" in summary
        for shown in (
            summary,
            called["data"]["summary"],
            started["data"]["summary"],
            completed["data"]["summary"],
        ):
            assert not SIMPLIFIED.search(shown), shown
    else:
        assert "人资知识库" in summary
    assert "HR" in started["data"]["summary"] and "HR" in completed["data"]["summary"]
    assert completed["data"]["answer"]  # the expert's answer, beside the sentence

    # A replay shows the same sentences.
    saved = await database_sync_to_async(
        lambda: {m.tool["name"]: m.tool for m in ChatMessage.objects.filter(role="tool")}
    )()
    assert saved["kb_search"]["summary"] == summary
    assert saved["kb_search"]["arguments"] == result["data"]["arguments"]
    assert saved["delegate"]["summary"] == completed["data"]["summary"]
