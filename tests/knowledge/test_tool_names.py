"""kb_search and kb_documents name knowledge bases as the user reads them: in the turn's
language and script, lists joined with "、" in Chinese, never by their keys."""

from __future__ import annotations

import json

import pytest
from django.utils import translation

from agents.knowledge.services import knowledge_base_create
from agents.registry import ToolContext, execute, get_tool
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db


def call(key: str, user, agent, language: str, **args) -> dict:
    """The tool's result as the model reads it, run in a turn of `language`."""
    with translation.override(language):
        result = execute(get_tool(key), ToolContext(user=user, agent=agent), json.dumps(args))
    return json.loads(result.as_content())["result"]


@pytest.fixture
def team(db, upload):
    """An agent with two knowledge bases named in Simplified Chinese and English."""
    agent = make_agent("office")
    leave = knowledge_base_create(
        name="leave", display_names={"zh-hans": "假勤规定", "en": "Leave rules"}, agents=[agent]
    )
    knowledge_base_create(
        name="travel", display_names={"zh-hans": "差旅规定", "en": "Travel rules"}, agents=[agent]
    )
    upload(leave, "leave.md", "# 特休\n\n到職滿一年者給予特休七日。", title="假勤規定")
    return agent


@pytest.mark.parametrize(
    ("language", "names"),
    [("zh-hant", "假勤規定、差旅規定"), ("zh-hans", "假勤规定、差旅规定"), ("en", "Leave rules")],
)
def test_no_passage_names_the_knowledge_bases_searched(team, language, names):
    found = call("kb_search", make_user("ana"), team, language, query="潛水裝備 scuba")
    assert found["passages"] == []
    assert names in found["message"] and "leave" not in found["message"].replace("Leave", "")
    assert found["knowledge_bases"] == ["leave", "travel"]  # the keys stay for programs


def test_listed_documents_carry_their_knowledge_bases_name(team):
    found = call("kb_documents", make_user("ana"), team, "zh-hant")
    assert [(d["kb"], d["kb_name"]) for d in found["documents"]] == [("leave", "假勤規定")]
    assert found["searched"] == ["假勤規定", "差旅規定"]


def test_no_listed_document_names_the_knowledge_bases_in_english(team):
    found = call("kb_documents", make_user("ana"), team, "en", query="scuba")
    assert found["documents"] == []
    assert "Leave rules and Travel rules" in found["message"]
