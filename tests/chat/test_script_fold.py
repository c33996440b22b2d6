"""Chat search folds 繁/简 as knowledge search does: 请假 finds 請假 chats and back, in titles,
messages and their snippets, on either database."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from chat.script_fold import find_folded, fold_pattern
from chat.selectors import search_snippet, sessions_search, sessions_titled

pytestmark = pytest.mark.django_db


def chat(user, title: str, *said: str, role: str = "user") -> ChatSession:
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title=title)
    for text in said:
        ChatMessage.objects.create(id=uuid.uuid4(), session=session, role=role, content=text)
    return session


def titles(sessions) -> set[str]:
    return {s.title for s in sessions}


def test_simplified_words_find_traditional_messages_and_back(user, other_user):
    chat(user, "Time off", "我下週想請假三天")
    chat(user, "请假流程", "怎么走流程？")
    chat(user, "Budget", "第三季预算", role="agent")
    chat(user, "Weather", "明天會下雨嗎")
    chat(other_user, "請假 secret", "請假")
    assert titles(sessions_search(user=user, query="请假")) == {"Time off", "请假流程"}
    assert titles(sessions_search(user=user, query="請假")) == {"Time off", "请假流程"}
    assert titles(sessions_search(user=user, query="預算")) == {"Budget"}
    assert titles(sessions_search(user=user, query="雨")) == {"Weather"}


def test_a_tool_message_is_not_searched_and_ascii_stays_case_insensitive(user):
    chat(user, "Tools", "請假 tool output", role="tool")
    chat(user, "Mixed", "HR 請假 Policy")
    assert titles(sessions_search(user=user, query="请假")) == {"Mixed"}
    assert titles(sessions_search(user=user, query="hr 请假 policy")) == {"Mixed"}
    assert titles(sessions_search(user=user, query="policy")) == {"Mixed"}


def test_punctuation_in_a_folded_query_is_matched_literally(user):
    chat(user, "Sums", "6*7 (乘法) = 42? 請假[1]")
    chat(user, "Other", "67 乘法 42 请假1")
    assert titles(sessions_search(user=user, query="6*7 (乘法)")) == {"Sums"}
    assert titles(sessions_search(user=user, query="请假[1]")) == {"Sums"}
    assert titles(sessions_search(user=user, query="請.*1")) == set()
    assert titles(sessions_search(user=user, query="[乘")) == set()


def test_the_title_filter_folds_too(user):
    chat(user, "請假規定")
    chat(user, "报销")
    assert titles(sessions_titled(user=user, query="请假")) == {"請假規定"}
    assert titles(sessions_titled(user=user, query="報銷")) == {"报销"}


def test_the_snippet_shows_the_message_in_its_own_script(user):
    session = chat(user, "Leave", "前面的話" * 20 + "我下週想請假三天，要怎麼申請？")
    snippet = search_snippet(session=session, query="请假")
    assert "請假" in snippet and snippet.startswith("…")


def test_a_pattern_is_built_only_where_a_character_has_variants():
    assert fold_pattern("budget") is None and fold_pattern("雨") is None
    assert set(fold_pattern("请假")[1:-2]) >= {"请", "請"}
    assert find_folded("週末去機場", "机场") == 3 and find_folded("abc", "机场") == -1
