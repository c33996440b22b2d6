"""The built-in offline model: deterministic keyword rules, honest that it is not a real model."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from agents.providers.base import ModelRequest, ProviderEvent, TextDelta, ToolCallRequest, Usage
from agents.registry import offline_rules
from agents.tools.offline_rules import ARITHMETIC
from config.text import simplified

OFFLINE_LABEL = "[offline model]"


class OfflineProvider:
    """Answers by rules: calls an offered tool whose rule matches, else explains itself."""

    name = "offline"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream a deterministic reply word by word, or tool calls."""
        last = request.messages[-1] if request.messages else {"role": "user", "content": ""}
        calls = _plan_next(request) if last["role"] == "tool" else _calls(request, _text(last))
        if calls:
            for index, (name, arguments) in enumerate(calls):
                seed = (
                    f"{len(request.messages)}:{name}:{index}:{_text(last)}:{json.dumps(arguments)}"
                )
                digest = hashlib.sha1(seed.encode()).hexdigest()[:12]
                yield ToolCallRequest(f"offline_{digest}", name, json.dumps(arguments))
            yield Usage(_count(request.messages), 8 * len(calls))
            return
        if last["role"] == "tool":
            reply = _summarize_tools(_plan_results(request.messages))
        else:
            reply = _out_of_reach(_text(last), _system(request)) or _explain(request, last)
        yield from _words(reply)
        yield Usage(_count(request.messages), len(reply.split()))


def _calls(request: ModelRequest, text: str) -> list[tuple[str, dict[str, Any]]]:
    """Delegations the text routes to, else the first offered tool whose rule applies."""
    offered = {t["function"]["name"]: t for t in request.tools}
    calls = _route(text, offered.get("delegate"))
    if not calls:
        calls = _plan_step(text, offered.get("delegate"), 0)
    if not calls:
        picked = _pick_tool(text, set(offered))
        calls = [picked] if picked else []
    return calls


_EXPERT_LINE = re.compile(r"^- (?P<name>[\w-]+) \((?P<display>[^)]*)\): (?P<about>.*)$", re.M)


def _route(text: str, delegate: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    """Delegate calls to every offered expert whose tags or name occur in the text (English or
    Chinese; an arithmetic expression counts as the tag "arithmetic"). Several: in parallel."""
    if delegate is None:
        return []
    words = text.lower()
    if ARITHMETIC.search(text):
        words += " arithmetic"
    calls = []
    for match in _EXPERT_LINE.finditer(delegate["function"]["description"]):
        tags = match.group("about").rsplit("Tags:", 1)[1] if "Tags:" in match.group("about") else ""
        keywords = [t.strip(" .").lower() for t in tags.split(",") if t.strip(" .")]
        keywords.append(match.group("name").lower())
        hit = next((keyword for keyword in keywords if _mentions(words, keyword)), None)
        if hit is not None:
            reason = f"the message mentions “{hit}”, which {match.group('display')} covers"
            calls.append(
                ("delegate", {"target": match.group("name"), "task": text, "reason": reason})
            )
    return calls


# Errands ("pick someone up at the airport Saturday morning", 周末早上去机场接人): an entry agent
# with task, weather and reminder experts asks them one after the other, each in words its own
# rules understand; the reminder comes after the task exists. The one plan the rules know.
# An errand is a trip to fetch or drop someone or something (not 连接人工…) with a time: both.
_ERRAND = re.compile(
    r"(?<![连連])接人|接[機机]|送[機机]|[去到][机機]场|\bpick (?:\w+ ){0,3}?up\b(?! where)"
    r"|\bdrop (?:\w+ ){0,3}?off\b",
    re.I,
)
_WHEN = re.compile(
    r"周末|週末|[今明后後]天|早上|上午|中午|下午|傍晚|晚上|星期.|[周週][一二三四五六日天]"
    r"|\b(?:today|tomorrow|tonight|morning|afternoon|evening|weekend"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.I,
)


def _is_errand(text: str) -> bool:
    """Whether the text asks for an errand at a time (both cues present)."""
    return bool(_ERRAND.search(text) and _WHEN.search(text))


_PLANNED = "an errand:"  # how the plan's delegations give their reason (and are told apart)
_ERRAND_STEPS = (  # (a tag of the expert, the task in Chinese, in English)
    ("task", "创建任务：{text}", "Add a task: {text}"),
    ("weather", "{text}，天气怎么样？", "What is the weather for this: {text}?"),
    ("remind", "提醒我{text}", "Remind me to {text}"),
)


def _plan_step(
    text: str, delegate: dict[str, Any] | None, step: int
) -> list[tuple[str, dict[str, Any]]]:
    """The delegation of step `step` of the errand plan, if the text is an errand and every
    expert of the plan is offered (else none: one rule per message, as before)."""
    chosen = _errand_experts(delegate)
    if not chosen or not _is_errand(text) or step >= len(_ERRAND_STEPS):
        return []
    _tag, chinese, english = _ERRAND_STEPS[step]
    name, display = chosen[step]
    task = (chinese if _CJK.search(text) else english).format(text=text)
    reason = f"{_PLANNED} step {step + 1} of 3 (task, weather, reminder) is for {display}"
    return [("delegate", {"target": name, "task": task, "reason": reason})]


def _errand_experts(delegate: dict[str, Any] | None) -> list[tuple[str, str]] | None:
    """(name, display name) of the plan's experts in step order, if all are offered."""
    if delegate is None:
        return None
    experts: dict[str, tuple[str, str]] = {}
    for match in _EXPERT_LINE.finditer(delegate["function"]["description"]):
        about = match.group("about")
        tags = about.rsplit("Tags:", 1)[1] if "Tags:" in about else ""
        for tag in (t.strip(" .").lower() for t in tags.split(",")):
            experts.setdefault(tag, (match.group("name"), match.group("display")))
    chosen = [experts.get(tag) for tag, _zh, _en in _ERRAND_STEPS]
    return chosen if all(chosen) else None  # type: ignore[return-value]


def _plan_next(request: ModelRequest) -> list[tuple[str, dict[str, Any]]]:
    """After a step of the errand plan answered: the next step (none once all are done, or
    when this turn's delegations were not the plan's: a message routed by its words)."""
    messages = request.messages
    since = _last_user_index(messages)
    offered = {t["function"]["name"]: t for t in request.tools}
    experts = _errand_experts(offered.get("delegate"))
    if since is None or experts is None:
        return []
    asked = [
        json.loads(call["function"]["arguments"])
        for m in messages[since:]
        for call in m.get("tool_calls") or ()
        if call["function"]["name"] == "delegate"
    ]
    planned = [a.get("target") for a in asked if str(a.get("reason", "")).startswith(_PLANNED)]
    if not asked or planned != [name for name, _display in experts[: len(asked)]]:
        return []
    return _plan_step(_text(messages[since]), offered.get("delegate"), len(asked))


def _last_user_index(messages: list[dict[str, Any]]) -> int | None:
    """Where the last user message is (None: there is none)."""
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None
    )


def _plan_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages whose trailing tool results the summary describes: after an errand plan,
    every step's result since the user's message (its calls were one per assistant message)."""
    since = _last_user_index(messages) or 0
    turn = messages[since:]
    steps = [m for m in turn if m["role"] == "assistant" and m.get("tool_calls")]
    if not _is_errand(_text(turn[0]) if turn else "") or len(steps) < 2:
        return messages
    results = [m for m in turn if m["role"] == "tool"]
    merged = {"role": "assistant", "tool_calls": [c for m in steps for c in m["tool_calls"]]}
    return [*messages[:since], turn[0], merged, *results]


_NO_ACCESS = re.compile(r"Experts that exist but this user may not use \(no access\): (.*?)\. If")
_NO_ACCESS_ITEM = re.compile(
    r"(?P<name>[\w-]+) \((?P<display>[^;)]*)(?:; tags: (?P<tags>[^)]*))?\): (?P<needs>[^;]*)"
)


def _out_of_reach(text: str, system: str) -> str | None:
    """A plain refusal when the text asks for an expert this user may not use."""
    found = _NO_ACCESS.search(system)
    if not found:
        return None
    words = text.lower()
    for item in _NO_ACCESS_ITEM.finditer(found.group(1)):
        keywords = [item.group("name").lower()]
        keywords += [t.strip().lower() for t in (item.group("tags") or "").split(",") if t.strip()]
        if any(_mentions(words, keyword) for keyword in keywords):
            return (
                f"{OFFLINE_LABEL} The {item.group('display')} could answer this, but your account "
                f"may not use it (it {item.group('needs')}). "
                "Please ask an administrator for access."
            )
    return None


def _mentions(text: str, keyword: str) -> bool:
    text, keyword = simplified(text), simplified(keyword)  # 任務 matches the tag 任务
    if re.search(r"[\u4e00-\u9fff]", keyword):  # Chinese: no word boundaries
        return keyword in text
    return re.search(rf"\b{re.escape(keyword)}\b", text) is not None


def _system(request: ModelRequest) -> str:
    return "\n".join(_text(m) for m in request.messages if m["role"] == "system")


def _words(reply: str) -> Iterator[TextDelta]:
    delay = settings.OFFLINE_MODEL_DELAY_MS / 1000
    for word in re.findall(r"\S+\s*", reply):
        if delay:
            time.sleep(delay)
        yield TextDelta(word)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else json.dumps(content)


def _count(messages: list[dict[str, Any]]) -> int:
    return sum(len(_text(m).split()) for m in messages)


def _pick_tool(text: str, offered: set[str]) -> tuple[str, dict[str, Any]] | None:
    for key, rule in offline_rules():
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
    chinese = _CJK.search(_last_user_text(messages)) is not None
    return f"{OFFLINE_LABEL} " + " ".join(
        _describe_knowledge(name, body, chinese) or _describe(name, body, chinese)
        for name, body in results
    )


_CJK = re.compile(r"[\u3400-\u9fff]")


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    return next((_text(m) for m in reversed(messages) if m["role"] == "user"), "")


def _describe_knowledge(name: str, body: dict[str, Any], chinese: bool) -> str | None:
    """What the knowledge tools found, citing each item by its [ref] (None: not such a tool)."""
    result = body.get("result")
    if name not in {"kb_search", "kb_documents"} or not body.get("ok"):
        return None
    if not isinstance(result, dict):
        return None
    items = result.get("documents") if name == "kb_documents" else result.get("passages")
    if not items:
        return result.get("message") or (
            "知識庫中沒有找到相關內容。" if chinese else "Nothing found."
        )
    if name == "kb_documents":
        first, rest = items[0], items[1:4]
        title, ref, version = first["title"], first["ref"], first["version"]
        date = first["effective_date"]
        if chinese:
            others = "、".join(f"「{d['title']}」[{d['ref']}]" for d in rest)
            line = f"最新的文件是「{title}」（第 {version} 版，生效日 {date}）[{ref}]。"
            return line + (f" 其他文件：{others}。" if others else "")
        others = ", ".join(f"“{d['title']}” [{d['ref']}]" for d in rest)
        line = f"The newest document is “{title}” (version {version}, effective {date}) [{ref}]."
        return line + (f" Others: {others}." if others else "")
    parts = []
    for passage in items[:2]:
        where = " › ".join([passage["title"], *passage.get("heading_path", [])[-1:]])
        quote = " ".join(passage["text"].split())[:220]
        parts.append(
            f"「{where}」：{quote} [{passage['ref']}]"
            if chinese
            else f"From “{where}”: {quote} [{passage['ref']}]"
        )
    return ("根據知識庫：" if chinese else "According to the knowledge base: ") + " ".join(parts)


def _describe(name: str, body: dict[str, Any], chinese: bool = False) -> str:
    if not body.get("ok"):
        error = body.get("error") or {}
        if name == "delegate":
            return f"{error.get('message', 'The expert could not help')}."
        return f"The {name} tool reported a problem: {error.get('message', 'unknown error')}"
    result = body.get("result", body.get("text"))  # "text": a result cut to TOOL_RESULT_MAX_CHARS
    if name == "delegate" and isinstance(result, dict):
        answer = str(result.get("answer", "")).replace(OFFLINE_LABEL, "").strip()
        if chinese:
            return f"{result.get('agent', '專家')}表示：{answer}"
        return f"{result.get('agent', 'The expert')} says: {answer}"
    if name == "current_time" and isinstance(result, dict):
        when = f"{result['weekday']}, {result['date']} ({result['timezone']})"
        return f"It is {result['time']} on {when}."
    if name == "calculate" and isinstance(result, dict):
        return f"{result['expression']} = {result['value']}."
    if isinstance(result, dict) and {"status", "message"} <= result.keys():  # planner tools
        return str(result["message"])
    return f"The {name} tool returned: {json.dumps(result, ensure_ascii=False)[:500]}"
