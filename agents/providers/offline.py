"""The built-in offline model: deterministic keyword rules, honest that it is not a real model."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, pgettext

from agents.knowledge.text import query_terms
from agents.providers.base import ModelRequest, ProviderEvent, TextDelta, ToolCallRequest, Usage
from agents.registry import (
    Tool,
    all_tools,
    get_tool,
    offline_answer,
    offline_rules,
    tool_claiming,
)
from agents.tool_labels import tool_label
from agents.tools.offline_rules import ARITHMETIC
from config.text import joined, reply_language, sentences, simplified

OFFLINE_LABEL = "[offline model]"  # in English; offline_label() in the active language
ASK_HUMAN = "ask_human"  # the tool that puts a question to staff (delegation.humans)
DELEGATE = "delegate"  # the tool that asks an expert (delegation.tree)


def offline_label() -> str:
    """The label that starts every reply of the offline model, in the active language."""
    return _("[offline model]")


class OfflineProvider:
    """Answers by rules: calls an offered tool whose rule matches, else explains itself."""

    name = "offline"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream a deterministic reply word by word, or tool calls; like a real model it
        answers in the language of the user's words (else the active one)."""
        said = _last_user_text(request.messages)
        with translation.override(reply_language(said, translation.get_language() or "")):
            yield from self._reply(request)

    def _reply(self, request: ModelRequest) -> Iterator[ProviderEvent]:
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
        if last["role"] == "tool":  # a feature's own format first (a watch's finding)
            reply = offline_answer(request.messages) or _summarize_tools(
                _plan_results(request.messages)
            )
        else:
            reply = _out_of_reach(_text(last), _system(request)) or _explain(request, last)
        yield from _words(reply)
        yield Usage(_count(request.messages), len(reply.split()))


def _calls(request: ModelRequest, text: str) -> list[tuple[str, dict[str, Any]]]:
    """Delegations the text routes to, else the first offered tool whose rule applies."""
    offered = {t["function"]["name"]: t for t in request.tools}
    person = _person_asked(text, set(offered))
    if person is not None:  # "轉人工", "ask a human": staff first, whatever the topic
        return [person]
    claimed = tool_claiming(text, set(offered))
    if claimed is not None:  # a standing order ("every Monday have finance …") is the agent's
        return [claimed]
    calls = _route(text, offered.get("delegate"))
    if not calls:
        calls = _plan_step(text, offered.get("delegate"), 0)
    if not calls:
        # An outside tool that fits the words before the built-in rules (whose knowledge search
        # takes any question).
        picked = _pick_described(text, request.tools) or _pick_tool(text, set(offered))
        calls = [picked] if picked else []
    return calls


def _person_asked(text: str, offered: set[str]) -> tuple[str, dict[str, Any]] | None:
    """An ask_human call when it is offered and its rule reads the words as a request for a
    person: that wins over the department words an expert's tags would route."""
    if ASK_HUMAN not in offered:
        return None
    rule = dict(offline_rules()).get(ASK_HUMAN)
    arguments = rule(text) if rule is not None else None
    return (ASK_HUMAN, arguments) if arguments is not None else None


DESCRIBED_MIN_TERMS = 2  # shared terms (words, CJK bigrams) for a tool to fit the words


def _pick_described(text: str, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """An outside tool (MCP) with no required argument whose title and description share the
    most terms with the user's words (繁/简 alike), at least DESCRIBED_MIN_TERMS; its schema's
    defaults as arguments. Outside tools have no rule written for this model."""
    wanted = set(query_terms(text))
    best: tuple[int, str] | None = None
    for entry in tools:
        function = entry["function"]
        parameters = function.get("parameters") or {}
        if not function["name"].startswith("mcp__") or parameters.get("required"):
            continue
        shared = len(wanted & set(query_terms(function.get("description") or "", limit=400)))
        if shared >= DESCRIBED_MIN_TERMS and (best is None or shared > best[0]):
            best = (shared, function["name"])
    return (best[1], {}) if best else None


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
            reason = _("the message mentions “%(word)s”, which %(expert)s covers") % {
                "word": hit,
                "expert": match.group("display"),
            }
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


# How the plan's delegations give their reason, and are told apart from routed ones.
_PLANNED = gettext_noop("An errand, step %(step)s of 3 (task, weather, reminder), for %(expert)s.")
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
    reason = _(_PLANNED) % {"step": step + 1, "expert": display}
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
    planned = [a.get("target") for a in asked if _is_planned(str(a.get("reason", "")))]
    if not asked or planned != [name for name, _display in experts[: len(asked)]]:
        return []
    return _plan_step(_text(messages[since]), offered.get("delegate"), len(asked))


def _is_planned(reason: str) -> bool:
    """Whether a delegation's reason is the errand plan's (in English or the active language)."""
    return any(_form_pattern(form).fullmatch(reason) for form in {_PLANNED, _(_PLANNED)})


def _form_pattern(form: str) -> re.Pattern[str]:
    """A pattern matching the sentence `form` with any values in its placeholders."""
    parts = re.split(r"%\(\w+\)s", form)
    return re.compile(".+?".join(re.escape(part) for part in parts), re.S)


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
            return _(
                "%(label)s The %(expert)s could answer this, but your account may not use it "
                "(it %(needs)s). Please ask an administrator for access."
            ) % {
                "label": offline_label(),
                "expert": item.group("display"),
                "needs": item.group("needs"),
            }
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
    tools = sorted(_label(t["function"]["name"]) for t in request.tools)  # as people know them
    words = {"label": offline_label(), "tools": joined(tools), "said": said}
    if tools:
        return (
            _(
                "%(label)s I am the built-in offline model, so I only follow simple rules. I can "
                "use these tools: %(tools)s. Set OPENAI_API_KEY (or OPENAI_BASE_URL) to talk to a "
                "real model. You said: “%(said)s”"
            )
            % words
        )
    return (
        _(
            "%(label)s I am the built-in offline model, so I only follow simple rules. Set "
            "OPENAI_API_KEY (or OPENAI_BASE_URL) to talk to a real model. You said: “%(said)s”"
        )
        % words
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
    parts = [_describe_knowledge(name, body) or _describe(name, body) for name, body in results]
    return f"{offline_label()} " + sentences(*parts)


_CJK = re.compile(r"[\u3400-\u9fff]")


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    return next((_text(m) for m in reversed(messages) if m["role"] == "user"), "")


def _describe_knowledge(name: str, body: dict[str, Any]) -> str | None:
    """What the knowledge tools found, citing each item by its [ref] (None: not such a tool)."""
    result = body.get("result")
    if name not in {"kb_search", "kb_documents"} or not body.get("ok"):
        return None
    if not isinstance(result, dict):
        return None
    items = result.get("documents") if name == "kb_documents" else result.get("passages")
    if not items:
        return result.get("message") or _("Nothing found in the knowledge base.")
    if name == "kb_documents":
        first, rest = items[0], items[1:4]
        line = _(
            "The newest document is “%(title)s” (version %(version)s, effective %(date)s) "
            "[%(ref)s]."
        ) % {
            "title": first["title"],
            "version": first["version"],
            "date": first["effective_date"],
            "ref": first["ref"],
        }
        if not rest:
            return line
        # Translators: how a list of documents is separated (a comma, or 、 in Chinese).
        others = pgettext("list separator", ", ").join(
            _("“%(title)s” [%(ref)s]") % {"title": d["title"], "ref": d["ref"]} for d in rest
        )
        return sentences(line, _("Others: %(documents)s.") % {"documents": others})
    parts = [
        _("From “%(where)s”: %(quote)s [%(ref)s]")
        % {
            "where": " › ".join([passage["title"], *passage.get("heading_path", [])[-1:]]),
            "quote": " ".join(passage["text"].split())[:220],
            "ref": passage["ref"],
        }
        for passage in items[:2]
    ]
    return _("According to the knowledge base: %(passages)s") % {"passages": " ".join(parts)}


def _describe_outside(result: dict[str, Any]) -> str:
    """What an outside system (MCP) answered: its summary or text, as it said it."""
    structured = result.get("structured")
    said = structured.get("summary") if isinstance(structured, dict) else None
    if not isinstance(said, str):
        said = result.get("text") or json.dumps(structured, ensure_ascii=False)[:500]
    names = result["source"].get("server_names") or {}
    system = names.get((translation.get_language() or "").lower()) or names.get("")
    return _("%(system)s answered: %(said)s") % {
        "system": system or result["source"].get("server", "?"),
        "said": said.strip()[:1500],
    }


def _describe(name: str, body: dict[str, Any]) -> str:
    if not body.get("ok"):
        error = body.get("error") or {}
        if name == "delegate":
            return error.get("message") or _("The expert could not help.")
        return _("The %(tool)s tool reported a problem: %(problem)s") % {
            "tool": _label(name),
            "problem": error.get("message") or _("unknown error"),
        }
    result = body.get("result", body.get("text"))  # "text": a result cut to TOOL_RESULT_MAX_CHARS
    if name == "delegate" and isinstance(result, dict):
        answer = str(result.get("answer", ""))
        for label in {OFFLINE_LABEL, offline_label()}:
            answer = answer.replace(label, "")
        return _("%(expert)s says: %(answer)s") % {
            "expert": result.get("agent") or _("The expert"),
            "answer": answer.strip(),
        }
    if isinstance(result, dict) and result.get("source", {}).get("kind") == "mcp":
        return _describe_outside(result)
    if name == "current_time" and isinstance(result, dict):
        now = datetime.fromisoformat(result["iso"])
        return _("It is %(time)s on %(day)s (%(zone)s).") % {
            "time": result["time"],
            "day": date_format(now, pgettext("weekday and date", "l, Y-m-d")),
            "zone": result["timezone"],
        }
    if name == "calculate" and isinstance(result, dict):
        return f"{result['expression']} = {result['value']}."
    if isinstance(result, dict) and {"status", "message"} <= result.keys():  # planner tools
        return str(result["message"])
    if isinstance(result, dict) and isinstance(result.get("message"), str) and result["message"]:
        return result["message"]  # what the tool said in words
    return _("The %(tool)s tool returned: %(result)s") % {
        "tool": _label(name),
        "result": json.dumps(result, ensure_ascii=False)[:500],
    }


def _label(name: str) -> str:
    """The human name of the tool a model called as `name`, in the active language (never the
    function name: people read it)."""
    if name == DELEGATE:
        return _("Ask an expert")
    registered: Tool | None = get_tool(name)
    if registered is None and name.startswith("mcp__"):  # an outside tool, by function name
        registered = next((t for t in all_tools() if t.name == name), None)
    return tool_label(registered, name)
