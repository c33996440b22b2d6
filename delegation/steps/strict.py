"""Strict answers ("answer only from knowledge"): the prompt rule, and the honest refusal that
replaces an answer when the knowledge bases held nothing for it."""

from __future__ import annotations

import json
import re
from typing import Any

from delegation.models import Run
from delegation.routing.models import Mode
from delegation.routing.selectors import mode_of
from delegation.steps.citations import KNOWLEDGE_TOOLS

CITE_RULE = (
    "When you use passages or documents from kb_search or kb_documents, or pages from "
    "web_fetch, cite each one right after the sentence that uses it with its ref number in "
    "square brackets, like [1]."
)
STRICT_RULE = (
    "Answer ONLY from the passages your knowledge tools return, citing every factual sentence. "
    "If they do not contain the answer, do not answer from general knowledge: say so, and name "
    "what is missing (which kind of document, which section)."
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def run_is_strict(run: Run) -> bool:
    """Whether this run may answer only from knowledge: its agent says so, or the turn is in
    STRICT mode and the run is the entry agent's or holds knowledge tools."""
    if run.agent_config.get("answer_from_knowledge_only"):
        return True
    holds_knowledge = bool(KNOWLEDGE_TOOLS & set(run.agent_config["tool_keys"]))
    return mode_of(run) == Mode.STRICT and (run.parent_id is None or holds_knowledge)


def strict_refusal(run: Run) -> str:
    """Say that the knowledge bases hold nothing for this question, what was searched, and what
    document would answer it (in the user's language: Chinese or English)."""
    queries, bases = _searches(run)
    asked = queries[-1] if queries else run.task[:200]
    where = ", ".join(bases)
    if _mostly_chinese(run.task):
        searched = f"（已搜尋：{where}）" if where else ""
        return (
            f"我只能根據知識庫回答，但知識庫中沒有關於「{asked}」的內容{searched}。"
            f"缺少的是：一份涵蓋「{asked}」的文件或章節。請管理員把它加入知識庫，或改問相關部門的負責人。"
        )
    searched = f" (searched: {where})" if where else ""
    return (
        f"I can only answer from the knowledge base, and it has nothing on “{asked}”{searched}. "
        f"What is missing: a document, or a section of one, that covers “{asked}”. An "
        "administrator can add it to the knowledge base; until then, please ask the department "
        "that owns the topic."
    )


def _mostly_chinese(text: str) -> bool:
    """Whether the user wrote mostly Chinese (more Han characters than Latin letters)."""
    return len(_CJK.findall(text)) > len(re.findall(r"[A-Za-z]", text))


def _searches(run: Run) -> tuple[list[str], list[str]]:
    """The queries searched for in this run and the runs below it (an entry agent refuses on
    its experts' searches), and the knowledge bases searched."""
    queries: list[str] = []
    bases: list[str] = []
    turn = Run.objects.filter(root_id=run.root_id_or_self).exclude(pk=run.pk)
    below = [r for r in turn.only("transcript", "path") if r.path[: len(run.path)] == run.path]
    for message in [m for r in [run, *below] for m in r.transcript]:
        for call in message.get("tool_calls") or []:
            if call["function"]["name"] == "kb_search":
                arguments: Any = _loads(call["function"]["arguments"])
                if isinstance(arguments, dict) and isinstance(arguments.get("query"), str):
                    queries.append(arguments["query"])
        if message.get("role") == "tool":
            body = _loads(message.get("content") or "")
            result = body.get("result") if isinstance(body, dict) else None
            if isinstance(result, dict):
                bases += [b for b in result.get("knowledge_bases", []) if b not in bases]
    return queries, bases


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return None
