"""The built-in offline model: deterministic keyword rules, honest that it is not a real model."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings

from agents.providers.base import ModelRequest, ProviderEvent, TextDelta, ToolCallRequest, Usage
from reminders.offline_rules import PLANNER_RULES

OFFLINE_LABEL = "[offline model]"

_ARITHMETIC = re.compile(r"[-+(]*\d[\d.\s]*(?:[-+*/^%×÷]\s*[-+(]*\d[\d.\s)]*)+")
_TIME_WORDS = re.compile(
    r"\b(time|date|today|weekday|what day)\b|几点|时间|日期|今天|星期|幾點|時間", re.IGNORECASE
)
_SEARCH = re.compile(r"(?:search|find)\s+(?:in\s+)?my\s+chats?\s+(?:for\s+)?(.+)", re.IGNORECASE)


def _time_args(text: str) -> dict[str, Any] | None:
    return {} if _TIME_WORDS.search(text) else None


def _calculate_args(text: str) -> dict[str, Any] | None:
    match = _ARITHMETIC.search(text)
    if not match:
        return None
    expression = match.group(0).replace("×", "*").replace("÷", "/").strip()
    return {"expression": expression}


def _search_args(text: str) -> dict[str, Any] | None:
    match = _SEARCH.search(text)
    return {"query": match.group(1).strip(" ?.!")} if match else None


# tool key -> how to read its arguments from the user's words (None: the rule does not apply).
# The planner's rules come first: they need explicit cues ("add a task", "remind me"), while
# the time rule fires on any "today".
RULES: dict[str, Callable[[str], dict[str, Any] | None]] = {
    **PLANNER_RULES,
    "calculate": _calculate_args,
    "current_time": _time_args,
    "search_my_chats": _search_args,
}


class OfflineProvider:
    """Answers by rules: calls an offered tool whose rule matches, else explains itself."""

    name = "offline"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream a deterministic reply word by word, or one tool call."""
        last = request.messages[-1] if request.messages else {"role": "user", "content": ""}
        offered = {t["function"]["name"]: t for t in request.tools}
        calls = [] if last["role"] == "tool" else _route(_text(last), offered.get("delegate"))
        if not calls and last["role"] != "tool":
            picked = _pick_tool(_text(last), set(offered))
            calls = [picked] if picked else []
        if calls:
            for index, (name, arguments) in enumerate(calls):
                seed = (
                    f"{len(request.messages)}:{name}:{index}:{_text(last)}:{json.dumps(arguments)}"
                )
                digest = hashlib.sha1(seed.encode()).hexdigest()[:12]
                yield ToolCallRequest(f"offline_{digest}", name, json.dumps(arguments))
            yield Usage(_count(request.messages), 8 * len(calls))
            return
        reply = (
            _summarize_tools(request.messages)
            if last["role"] == "tool"
            else _explain(request, last)
        )
        words = re.findall(r"\S+\s*", reply)
        delay = settings.OFFLINE_MODEL_DELAY_MS / 1000
        for word in words:
            if delay:
                time.sleep(delay)
            yield TextDelta(word)
        yield Usage(_count(request.messages), len(words))


_EXPERT_LINE = re.compile(r"^- (?P<name>[\w-]+) \((?P<display>[^)]*)\): (?P<about>.*)$", re.M)


def _route(text: str, delegate: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    """Delegate calls to every offered expert whose tags or name occur in the text (English or
    Chinese; an arithmetic expression counts as the tag "arithmetic"). Several: in parallel."""
    if delegate is None:
        return []
    words = text.lower()
    if _ARITHMETIC.search(text):
        words += " arithmetic"
    calls = []
    for match in _EXPERT_LINE.finditer(delegate["function"]["description"]):
        tags = match.group("about").rsplit("Tags:", 1)[1] if "Tags:" in match.group("about") else ""
        keywords = [t.strip(" .").lower() for t in tags.split(",") if t.strip(" .")]
        keywords.append(match.group("name").lower())
        if any(_mentions(words, keyword) for keyword in keywords):
            calls.append(
                (
                    "delegate",
                    {
                        "target": match.group("name"),
                        "task": text,
                        "reason": "offline routing by tags",
                    },
                )
            )
    return calls


def _mentions(text: str, keyword: str) -> bool:
    if re.search(r"[\u4e00-\u9fff]", keyword):  # Chinese: no word boundaries
        return keyword in text
    return re.search(rf"\b{re.escape(keyword)}\b", text) is not None


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else json.dumps(content)


def _count(messages: list[dict[str, Any]]) -> int:
    return sum(len(_text(m).split()) for m in messages)


def _pick_tool(text: str, offered: set[str]) -> tuple[str, dict[str, Any]] | None:
    for key, rule in RULES.items():
        if key in offered:
            arguments = rule(text)
            if arguments is not None:
                return key, arguments
    return None


def _explain(request: ModelRequest, last: dict[str, Any]) -> str:
    said = _text(last).strip()
    if len(said) > 200:
        said = said[:200] + "…"
    tools = sorted(t["function"]["name"] for t in request.tools)
    can = f" I can use these tools: {', '.join(tools)}." if tools else ""
    return (
        f"{OFFLINE_LABEL} I am the built-in offline model, so I only follow simple rules.{can} "
        f"Set OPENAI_API_KEY (or OPENAI_BASE_URL) to talk to a real model. You said: “{said}”"
    )


def _summarize_tools(messages: list[dict[str, Any]]) -> str:
    """Describe the results of the tool calls made since the last assistant message."""
    names: dict[str, str] = {}
    results: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        try:
            body = json.loads(message["content"])
        except (TypeError, json.JSONDecodeError):
            body = {"ok": True, "result": message["content"]}
        results.insert(0, (names.get(message.get("tool_call_id", ""), "tool"), body))
    return f"{OFFLINE_LABEL} " + " ".join(_describe(name, body) for name, body in results)


def _describe(name: str, body: dict[str, Any]) -> str:
    if not body.get("ok"):
        error = body.get("error") or {}
        if name == "delegate":
            return f"{error.get('message', 'The expert could not help')}."
        return f"The {name} tool reported a problem: {error.get('message', 'unknown error')}"
    result = body.get("result", body.get("text"))  # "text": a result cut to TOOL_RESULT_MAX_CHARS
    if name == "delegate" and isinstance(result, dict):
        answer = str(result.get("answer", "")).replace(OFFLINE_LABEL, "").strip()
        return f"{result.get('agent', 'The expert')} says: {answer}"
    if name == "current_time" and isinstance(result, dict):
        when = f"{result['weekday']}, {result['date']} ({result['timezone']})"
        return f"It is {result['time']} on {when}."
    if name == "calculate" and isinstance(result, dict):
        return f"{result['expression']} = {result['value']}."
    if isinstance(result, dict) and {"status", "message"} <= result.keys():  # planner tools
        return str(result["message"])
    return f"The {name} tool returned: {json.dumps(result, ensure_ascii=False)[:500]}"
