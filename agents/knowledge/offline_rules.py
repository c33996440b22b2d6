"""Rules that let the built-in offline model use an agent's knowledge from plain words (English
or Chinese): each returns the tool's arguments, or None when it does not apply. The kb tools are
offered only to agents with knowledge, so kb_search may fire on any knowledge-like question."""

from __future__ import annotations

import re
from typing import Any

Args = dict[str, Any] | None

_LATEST = re.compile(
    r"\b(?:latest|newest|most recent|last|recent)\b.*\b(?:files?|documents?|docs?|reports?)\b",
    re.IGNORECASE,
)
_ZH_LATEST = re.compile(r"最新|最近")
_DOCUMENT_WORDS = re.compile(r"檔案|文件|報告|档案|报告|資料|资料|文檔|文档", re.IGNORECASE)
_KNOWLEDGE_WORDS = re.compile(
    r"\b(?:rules?|polic(?:y|ies)|leave|holidays?|vacation|sick|expenses?|reimburse\w*|"
    r"reports?|revenue|budget|handbook|procedures?|guidelines?|how (?:do|many|much|long))\b"
    r"|規定|规定|規則|规则|政策|制度|辦法|办法|假|報銷|报销|費用|费用|營收|营收|預算|预算|"
    r"財務|财务|人資|人资|多少|幾天|几天|如何|怎麼|怎么",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[?？]|什麼|什么|哪些|哪個|哪个|是否|嗎|吗")


def kb_documents_args(text: str) -> Args:
    """ "The latest file/document/report" (最新的檔案/文件/報告): newest documents first."""
    latest = _DOCUMENT_WORDS.search(text) if _ZH_LATEST.search(text) else _LATEST.search(text)
    return {"sort": "newest", "limit": 5} if latest else None


def kb_search_args(text: str) -> Args:
    """A question about rules, policies, leave, money…: search with the user's words."""
    query = text.strip()
    if not query or len(query) > 500:
        return None
    if _KNOWLEDGE_WORDS.search(query) or _QUESTION.search(query):
        return {"query": query, "top_k": 5}
    return None


# tool key -> rule, in the order they should be tried (documents before search).
KNOWLEDGE_RULES = {"kb_documents": kb_documents_args, "kb_search": kb_search_args}
