"""The `ask_human` and `ask_user` registry tools, and their offline-model rules.

Their calls never reach these handlers: the run loop (delegation.humans.waits) turns each into
an inbox item and the run waits for the answer without a worker, as it waits for experts.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.registry import ToolContext, ToolError, tool
from delegation.routing.rules import person_asked, person_question

ASK_HUMAN = "ask_human"
ASK_USER = "ask_user"
QUESTION_TOOLS = frozenset({ASK_HUMAN, ASK_USER})

_OPTIONS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 200},
    "maxItems": 10,
    "description": "Answers to offer as choices (buttons).",
}


_ESCALATE = re.compile(
    r"\b(?:ask an? (?:human|person|manager|supervisor)|ask (?:the|a) staff"
    r"|escalate(?: to a human)?)\b[\s:,.-]*(?P<question>.*)"
    r"|(?:转人工|轉人工|人工客服|请示|請示)[\s:：，,]*(?P<zh>.*)",
    re.IGNORECASE | re.DOTALL,
)
_CHOOSE = re.compile(
    r"\b(?:help me )?(?:choose|pick|decide) between (?P<options>.+?)[\s?.!]*$", re.IGNORECASE
)
_CHOOSE_ZH = re.compile(r"(?P<a>[^，,。？?]+?)(?:还是|還是)(?P<b>[^，,。？?]+)")
_SPLIT = re.compile(r"\s*,\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", re.IGNORECASE)


def offline_ask_human(text: str) -> dict[str, Any] | None:
    """ "ask a human: may I refund order 42?", "escalate …", "转人工 …", "I want to talk to a
    person" (routing's words for a person, delegation.routing.rules) → ask_human."""
    found = _ESCALATE.search(text)
    if found:
        question = (found.group("question") or found.group("zh") or "").strip() or text.strip()
    elif words := person_asked(text):
        question = person_question(text, words)
    else:
        return None
    urgent = re.search(r"\burgent(?:ly)?\b|紧急|緊急", text, re.IGNORECASE) is not None
    return {"question": question[:2000], "urgency": "high" if urgent else "normal"}


def offline_ask_user(text: str) -> dict[str, Any] | None:
    """ "help me choose between tea, coffee or juice" / "茶还是咖啡？" → ask_user with buttons."""
    found = _CHOOSE.search(text)
    if found:
        options = [o.strip(" .?!") for o in _SPLIT.split(found.group("options")) if o.strip()]
    else:
        found_zh = _CHOOSE_ZH.search(text)
        options = [found_zh.group("a").strip(), found_zh.group("b").strip()] if found_zh else []
    options = [o[:200] for o in options if o][:10]
    if len(options) < 2:
        return None
    listed = _(" or ").join(options)
    return {
        "question": _("Which would you like: %(options)s?") % {"options": listed},
        "options": options,
    }


def _asked_elsewhere(context: ToolContext, arguments: dict[str, Any]) -> Any:
    raise ToolError("This question is answered by a person through the run loop.")


ask_human = tool(
    ASK_HUMAN,
    "Ask a staff member (a human expert or approver) a question and wait for the answer. "
    "Use it when you need a person's judgement, a fact only staff know, or permission.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "options": _OPTIONS,
            "urgency": {"type": "string", "enum": ["low", "normal", "high"], "default": "normal"},
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    title=gettext_lazy("Ask a staff member"),
    offline_rule=offline_ask_human,
    offline_priority=40,  # explicit words ("escalate", "ask a human"): before other rules
)(_asked_elsewhere)

ask_user = tool(
    ASK_USER,
    "Ask the user you are working for a question and wait for the answer; with options, the "
    "user picks one (shown as buttons). Use it when the request is ambiguous.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "options": _OPTIONS,
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    title=gettext_lazy("Ask you"),
    offline_rule=offline_ask_user,
    offline_priority=150,  # a loose pattern: after every tool's own rule
)(_asked_elsewhere)
