"""The offline model's knowledge rules, in Chinese and English."""

from __future__ import annotations

import pytest

from agents.knowledge.offline_rules import kb_documents_args, kb_search_args


@pytest.mark.parametrize(
    "text",
    [
        "財務部最新的檔案是什麼？",
        "财务部最新的文件是什么",
        "最新報告",
        "What is the latest file from finance?",
        "show me the newest documents",
        "most recent report please",
    ],
)
def test_latest_file_questions_list_documents(text):
    assert kb_documents_args(text) == {"sort": "newest", "limit": 5}


@pytest.mark.parametrize("text", ["人資假勤規定", "最新消息", "latest news", "what is 2+2"])
def test_other_text_does_not_list_documents(text):
    assert kb_documents_args(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "人資假勤規定",
        "病假可以請幾天？",
        "What are the leave rules?",
        "expense policy",
        "特休怎么算",
    ],
)
def test_knowledge_questions_search(text):
    assert kb_search_args(text) == {"query": text, "top_k": 5}


@pytest.mark.parametrize("text", ["hello", "thanks!", "", "x" * 600])
def test_small_talk_does_not_search(text):
    assert kb_search_args(text) is None
