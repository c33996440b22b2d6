"""kb_search and kb_documents through the registry, as the END user: access, versions, errors."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import Permission

from agents.knowledge.tools import knowledge_tool_keys_for
from agents.registry import ToolContext, execute, get_tool
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db


def call(key: str, user, agent, **args):
    result = execute(get_tool(key), ToolContext(user=user, agent=agent), json.dumps(args))
    return json.loads(result.as_content())


def test_kb_search_returns_cited_passages(corpus):
    body = call(
        "kb_search", corpus["reader"], corpus["finance_agent"], query="財務報告 營收", top_k=3
    )
    assert body["ok"] and body["result"]["knowledge_bases"] == ["finance"]
    best = body["result"]["passages"][0]
    assert set(best) >= {
        "document_id",
        "title",
        "version",
        "chunk_id",
        "heading_path",
        "score",
        "text",
        "effective_date",
    }
    assert best["title"] == "2026年第三季財務報告" and best["heading_path"][-1] == "營收"
    assert best["document_id"] == corpus["docs"]["q3"].pk and best["version"] == 1


def test_user_without_finance_access_never_gets_a_finance_passage(corpus):
    outsider = make_user("outsider")
    body = call(
        "kb_search", outsider, corpus["finance_agent"], query="finance 財務報告 營收 2026年第三季"
    )
    assert body["result"]["passages"] == []
    assert "may not read" in body["result"]["message"]
    docs = call("kb_documents", outsider, corpus["finance_agent"])
    assert docs["result"]["documents"] == [] and "may not read" in docs["result"]["message"]


def test_an_agent_sees_only_its_own_knowledge_bases(corpus):
    body = call("kb_search", corpus["reader"], corpus["hr_agent"], query="財務報告 營收 特休")
    assert {p["kb"] for p in body["result"]["passages"]} == {"hr"}


def test_permission_rule_is_checked_and_superusers_read_all(corpus):
    finance = corpus["finance"]
    finance.access_group = None
    finance.access_permission = "knowledge.view_document"
    finance.save()
    plain = make_user("plain")
    assert (
        call("kb_search", plain, corpus["finance_agent"], query="營收")["result"]["passages"] == []
    )
    plain.user_permissions.add(Permission.objects.get(codename="view_document"))
    plain = type(plain).objects.get(pk=plain.pk)  # fresh permission cache
    assert call("kb_search", plain, corpus["finance_agent"], query="營收")["result"]["passages"]
    boss = make_user("boss", is_superuser=True)
    assert call("kb_search", boss, corpus["finance_agent"], query="營收")["result"]["passages"]


def test_agent_without_knowledge_says_so(corpus, user):
    loner = make_agent("loner")
    for key in ("kb_search", "kb_documents"):
        body = call(key, user, loner, query="特休")
        assert body["ok"] and "no knowledge base" in body["result"]["message"]
    assert knowledge_tool_keys_for(loner) == []
    assert knowledge_tool_keys_for(corpus["hr_agent"]) == ["kb_documents", "kb_search"]


def test_the_run_pinned_agent_name_is_used(corpus, user):
    run = SimpleNamespace(agent_config={"name": "hr"})
    result = execute(get_tool("kb_search"), ToolContext(user=user, run=run), '{"query": "病假"}')
    assert json.loads(result.as_content())["result"]["passages"][0]["heading_path"][-1] == "病假"


def test_kb_documents_lists_the_latest_first_and_filters(corpus, upload, user):
    hr = corpus["hr"]
    upload(hr, "old.md", "舊規定", title="2025年假勤規定", effective_date="2025-01-01")
    upload(hr, "new.md", "新規定", title="2026年假勤規定", effective_date="2026-12-01")
    body = call("kb_documents", user, corpus["hr_agent"], sort="newest", limit=2)
    listed = body["result"]["documents"]
    assert [d["title"] for d in listed] == ["2026年假勤規定", listed[1]["title"]]
    assert listed[0]["effective_date"] == "2026-12-01" and listed[0]["kb"] == "hr"
    assert set(listed[0]) == {
        "document_id",
        "title",
        "version",
        "effective_date",
        "source",
        "kb",
        "kb_name",
    }
    found = call("kb_documents", user, corpus["hr_agent"], query="假勤规定", sort="title")  # 简体
    assert [d["title"] for d in found["result"]["documents"]] == [
        "2025年假勤規定",
        "2026年假勤規定",
        "人資假勤規定",
    ]


def test_kb_documents_hides_superseded_versions(corpus, upload, user):
    hr = corpus["hr"]
    upload(hr, "v2.md", "# 特休\n\n特休十日。", title="人資假勤規定")
    titles = [
        (d["title"], d["version"])
        for d in call("kb_documents", user, corpus["hr_agent"], limit=50)["result"]["documents"]
    ]
    assert ("人資假勤規定", 2) in titles and ("人資假勤規定", 1) not in titles


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        ({"query": ""}, "tool_error", "empty"),
        ({"query": "假" * 1001}, "tool_error", "limit is 1000"),
        ({"query": "假", "top_k": 0}, "invalid_arguments", "top_k"),
        ({"top_k": 3}, "invalid_arguments", "query"),
    ],
)
def test_bad_search_arguments_are_clear_tool_errors(corpus, user, args, code, words):
    body = call("kb_search", user, corpus["hr_agent"], **args)
    assert not body["ok"] and body["error"]["code"] == code and words in body["error"]["message"]


def test_knowledge_base_deleted_while_a_run_uses_it(corpus, user):
    agent = corpus["hr_agent"]
    assert call("kb_search", user, agent, query="病假")["result"]["passages"]
    corpus["hr"].delete()  # an admin removes it between two tool calls of the same run
    body = call("kb_search", user, agent, query="病假")
    assert body["ok"] and body["result"]["passages"] == []
    assert "no knowledge base" in body["result"]["message"]
