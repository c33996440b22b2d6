"""Answers cite the knowledge they use, experts' included; strict agents refuse without it."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group

from agents.knowledge.services import document_upload, knowledge_base_create
from agents.models import Agent
from chat.models import ChatMessage
from delegation.models import Run
from tests.delegation.conftest import make_team
from tests.delegation.test_run_endings import turn_events
from tests.fake_openai import delegate, text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = """# 2026年第三季財務報告

## 營收
本季營收為新台幣一億二千萬元，較上季成長百分之八。

## 費用
差旅與行銷費用合計三千萬元。
"""


def finance_knowledge(*, group: Group | None = None) -> int:
    """A finance knowledge base linked to the `finance` agent, with one indexed report."""
    kb = knowledge_base_create(
        name="finance-kb", access_group=group, agents=[Agent.objects.get(name="finance")]
    )
    document = document_upload(
        kb=kb, filename="q3.md", data=REPORT.encode(), title="第三季財務報告", background=False
    )
    return document.pk


def completed(events: list[dict], agent: str) -> dict:
    return [e for e in events if e["type"] == "message.completed" and e["agent"]["name"] == agent][
        -1
    ]


async def test_an_expert_cites_passages_and_the_entry_agent_carries_them(user, team):
    await database_sync_to_async(make_team)(boss=["finance"], finance=[])
    document_id = await database_sync_to_async(finance_knowledge)()
    team.script(
        "boss",
        delegate("finance", "Q3 營收?", reason="money"),
        text("財務部說營收一億二千萬 [1]。"),
    )
    team.script(
        "finance", tool_call("kb_search", {"query": "營收"}), text("本季營收一億二千萬元 [1]。")
    )
    events = await turn_events(user, "第三季營收多少?")

    # The expert was offered the knowledge tools and got numbered passages.
    offered = [t["function"]["name"] for t in team.requests["finance"][0]["tools"]]
    assert {"kb_search", "kb_documents"} <= set(offered)
    assert "[1]" in team.requests["finance"][0]["messages"][0]["content"]  # the citing rule
    expert = completed(events, "finance")["data"]["citations"]
    assert [(c["ref"], c["document_id"], c["title"]) for c in expert] == [
        (1, document_id, "第三季財務報告")
    ]
    assert expert[0]["chunk_id"] is not None and "營收" in expert[0]["quote"]
    assert expert[0]["heading_path"][-1] == "營收"

    # The entry agent read the expert's answer with the source renumbered into its own list.
    delegated = team.requests["boss"][1]["messages"][-1]["content"]
    assert '"citations": [{"ref": 1, "title": "第三季財務報告"' in delegated
    entry = completed(events, "boss")["data"]["citations"]
    assert [(c["document_id"], c["chunk_id"]) for c in entry] == [
        (document_id, expert[0]["chunk_id"])
    ]
    saved = await database_sync_to_async(
        lambda: ChatMessage.objects.filter(run__depth=0, role="agent").get()
    )()
    assert saved.citations == entry
    root = await database_sync_to_async(Run.objects.get)(depth=0)
    assert root.citations == entry


async def test_a_citation_of_a_passage_never_shown_is_dropped(user, team):
    await database_sync_to_async(make_team)(finance=[])
    await database_sync_to_async(finance_knowledge)()
    team.script(
        "finance", tool_call("kb_search", {"query": "營收"}), text("營收一億二千萬 [1]，另見 [7]。")
    )
    events = await turn_events(user, "營收?")
    citations = completed(events, "finance")["data"]["citations"]
    assert [c["ref"] for c in citations] == [1]


async def test_the_latest_document_is_cited_by_title_without_a_chunk(user, team):
    await database_sync_to_async(make_team)(finance=[])
    document_id = await database_sync_to_async(finance_knowledge)()
    team.script(
        "finance", tool_call("kb_documents", {"sort": "newest"}), text("最新的是第三季報告 [1]。")
    )
    events = await turn_events(user, "最新的檔案?")
    (citation,) = completed(events, "finance")["data"]["citations"]
    assert citation["document_id"] == document_id and citation["chunk_id"] is None
    assert citation["quote"] == "第三季財務報告"


async def test_a_strict_agent_with_nothing_found_says_what_is_missing(user, team):
    await database_sync_to_async(make_team)(finance=[])
    await database_sync_to_async(finance_knowledge)()
    await database_sync_to_async(
        lambda: Agent.objects.filter(name="finance").update(answer_from_knowledge_only=True)
    )()
    team.script(
        "finance",
        tool_call("kb_search", {"query": "董事會薪酬"}),
        text("董事會薪酬是五百萬。"),  # an invented answer: no passage supports it
    )
    events = await turn_events(user, "董事會薪酬是多少?")
    data = completed(events, "finance")["data"]
    assert "五百萬" not in data["text"] and data["citations"] == []
    assert "董事會薪酬" in data["text"] and "缺少" in data["text"]
    assert "ONLY from the passages" in team.requests["finance"][0]["messages"][0]["content"]


async def test_a_user_who_may_not_read_the_knowledge_gets_no_passage(user, team):
    def setup() -> None:
        make_team(finance=[])
        finance_knowledge(group=Group.objects.create(name="finance-readers"))

    await database_sync_to_async(setup)()
    team.script("finance", tool_call("kb_search", {"query": "營收"}), text("不知道。"))
    events = await turn_events(user, "營收?")
    result = [e for e in events if e["type"] == "tool.result"][0]["data"]["result"]
    assert result["passages"] == [] and "無權讀取" in result["message"]  # in the words' language
    assert completed(events, "finance")["data"]["citations"] == []
