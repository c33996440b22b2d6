"""Strict answers ("answer only from knowledge"): the prompt rule, and the honest refusal that
replaces an answer when the knowledge bases held nothing for it."""

from __future__ import annotations

import json
import re
from typing import Any

from django.utils.translation import gettext as _

from agents.knowledge.models import KnowledgeBase
from config.text import joined, sentences, simplified
from delegation.models import Run
from delegation.routing.models import Mode, RuleKind
from delegation.routing.rules import keywords_of
from delegation.routing.selectors import mode_of, policy_for
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
    """Say, in the run's language, which knowledge was searched and what it lacks ("I found
    nothing in Finance documents about “第三季預算”."): the topic, never the routing words the
    user typed to ask for strictness."""
    queries, bases = _searches(run)
    topic = refusal_topic(queries[-1] if queries else run.task[:200], _override_words(run))
    names = _base_names(bases, run.language)
    if names:
        found = _("I found nothing in %(bases)s about “%(topic)s”.") % {
            "bases": joined(names, run.language or None),
            "topic": topic,
        }
    else:
        found = _("I found nothing in the knowledge base about “%(topic)s”.") % {"topic": topic}
    advice = _(
        "I answer only from documents here, so I will not guess. An administrator can add a "
        "document that covers it; until then, please ask the department that owns the topic."
    )
    return sentences(found, advice)


# Words that only ask for strictness, as the shipped overrides and force_strict name them.
_STRICT_WORDS = ("strict", "STRICT", "嚴格", "严格", "KB-only", "只根據", "只根据")
# What frames a question around its topic: 請問… / …是多少？ / "what is …?"
_LEADING = re.compile(
    r"^(?:(?:please|pls)\s+)?(?:(?:answer|tell me|explain)\s+)?(?:(?:what|how much|how many|"
    r"when|where|who|which)(?:'s|\s+(?:is|are|was|were|do|does|did))?\s+)?"
    r"|^(?:請問|请问|請|请)",
    re.IGNORECASE,
)
_TRAILING = re.compile(r"(?:是多少|是什麼|是什么|是啥|有多少|多少|是幾|是几|嗎|吗|呢)+$")
_EDGES = " \t\n:：，,。.!！?？;；、-—「」『』“”\"'()（）[]"


def refusal_topic(text: str, words: list[str]) -> str:
    """What the question was about: `text` without the override `words` (繁/简 and case alike;
    a lead-in they end with a colon goes too) and without its question framing."""
    for word in sorted(set(words), key=len, reverse=True):
        text = _without(text, word)
    text = text.strip(_EDGES)
    text = _LEADING.sub("", text, count=1).strip(_EDGES)
    return _TRAILING.sub("", text).strip(_EDGES) or text


def _without(text: str, word: str) -> str:
    """`text` without `word` (an English word whole); a lead-in up to a colon that held it goes
    with it ("請嚴格根據文件回答：…")."""
    folded, wanted = simplified(text).lower(), simplified(word).lower()
    if not wanted or len(folded) != len(text):
        return text
    whole = not _CJK.search(wanted) and wanted[:1].isalnum()  # an English word: whole
    pattern = rf"(?<![\w-]){re.escape(wanted)}(?![\w-])" if whole else re.escape(wanted)
    found = re.search(pattern, folded)
    if found is None:
        return text
    colon = re.search(r"[:：]", text[found.end() :])
    if colon and colon.start() <= 20:
        return text[found.end() + colon.end() :]
    return text[: found.start()] + text[found.end() :]


def _override_words(run: Run) -> list[str]:
    """The words of the turn's override rules (they set a mode, they are not the topic)."""
    policy = policy_for(agent_name=run.root_or_self.agent_config.get("name", ""))
    words = list(_STRICT_WORDS)
    if policy is not None:
        for rule in policy.rules.filter(kind=RuleKind.OVERRIDE, enabled=True):
            words += keywords_of(rule.keywords)
    return words


def _base_names(names: list[str], language: str) -> list[str]:
    """The searched knowledge bases by the names people read in `language`."""
    bases = {kb.name: kb for kb in KnowledgeBase.objects.filter(name__in=names)}
    return [bases[n].name_in(language or None) if n in bases else n for n in names]


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
