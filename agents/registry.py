"""The tool registry: the code-side allowlist of tools agents may be given, and safe execution."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.conf import settings
from django.utils.translation import gettext as _
from jsonschema import Draft202012Validator

from config.errors import ERROR_CODES

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """Who a tool acts for: every tool scopes its data to `user`."""

    user: Any
    session: Any = None
    run: Any = None
    agent: Any = None
    call_id: str = ""  # the model's id of this call: stable across retries of the same call
    # Where a long call reports how far it got (value, total, message); None: nobody listens.
    progress: Callable[[float, float | None, str | None], None] | None = None


class ToolError(Exception):
    """Raised by a handler for a failure the model should read and may correct (`code`: one
    of ERROR_CODES' tool results, e.g. tool_timeout)."""

    def __init__(self, message: str, *, code: str = "tool_error") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Tool:
    """A registered tool: key, description, JSON schema of arguments, handler, rights, effects."""

    key: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[ToolContext, dict[str, Any]], Any]
    permission: str | None = None  # the END USER needs it for the tool to be offered
    side_effect: bool = False  # True when the tool changes data
    # How the built-in offline model reads this tool's arguments from the user's words (None:
    # the rule does not apply); lower `offline_priority` is tried first.
    offline_rule: Callable[[str], dict[str, Any] | None] | None = None
    offline_priority: int = 100
    # Words its rule reads are the holding agent's own to act on (a standing order: "every
    # Monday have finance …"), not a question for the experts they name: routing keeps them
    # with the agent, and the offline model tries this rule before asking anyone.
    claims_words: bool = False
    # A staff member approves each call (the inbox) before it runs, whatever the agent says.
    approval: bool = False
    # Safe to call again when a crash left unknown whether a call ran (None: unless it changes
    # data); a call that is not is put to a person instead of being repeated blindly.
    repeatable: bool | None = None
    # It reaches a system outside the platform (an MCP server, the web, mail): its calls count
    # in the turn's budget of such calls (TURN_MAX_TOOL_CALLS) and in the activity log.
    outside: bool = False
    function_name: str = ""  # the name the model calls it by ("": the key)
    # What people read of a call (docs/tools.md): `title` names the tool in the active
    # language ("Search documents"; a gettext_lazy string; "": the key, humanised), and
    # `summarize(arguments, result)` says what a successful call did, as one sentence in the
    # active language (None: the result's `message`, else the title and "done").
    title: Any = ""
    summarize: Callable[[dict[str, Any], Any], str] | None = None
    validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        Draft202012Validator.check_schema(self.parameters)
        object.__setattr__(self, "validator", Draft202012Validator(self.parameters))

    @property
    def name(self) -> str:
        """The function name a model sees and calls (OpenAI's `^[a-zA-Z0-9_-]{1,64}$`)."""
        return self.function_name or self.key

    @property
    def label(self) -> str:
        """The tool's human name in the active language (its key, humanised, if it has none)."""
        return str(self.title) or self.key.rsplit(".", 1)[-1].replace("_", " ").capitalize()

    @property
    def safe_to_repeat(self) -> bool:
        """Whether a call that may have run already may simply be made again."""
        return (not self.side_effect) if self.repeatable is None else self.repeatable

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI Chat Completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def allowed_for(self, user: Any) -> bool:
        """Whether this end user may have the tool used on their behalf."""
        return self.permission is None or bool(user and user.has_perm(self.permission))


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: ok with data, or an error code and message for the model."""

    ok: bool
    data: Any = None
    error_code: str = ""
    error: str = ""

    def __post_init__(self) -> None:
        if not self.ok and self.error_code not in ERROR_CODES:
            raise ValueError(f"undocumented tool error code {self.error_code!r}")

    def as_content(self) -> str:
        """The JSON text handed back to the model as the tool message content."""
        return self.rendered()[1]

    def as_shown(self) -> dict[str, Any]:
        """The outcome as the saved tool message, its events and the page show it: `ok` with
        `result` or `error`, bounded as the model's copy is: a result past TOOL_RESULT_MAX_CHARS
        of JSON becomes the first that many characters of it (`truncated`)."""
        return self.rendered()[0]

    def rendered(self) -> tuple[dict[str, Any], str]:
        """`as_shown()` and `as_content()` from one serialisation of the outcome (a tool call
        needs both)."""
        body = self._body()
        text = json.dumps(body, ensure_ascii=False, default=str)
        limit = settings.TOOL_RESULT_MAX_CHARS
        if len(text) <= limit:
            return body, text
        cut = text[:limit]
        content = json.dumps({"ok": self.ok, "truncated": True, "text": cut}, ensure_ascii=False)
        return {"ok": self.ok, "result": cut, "truncated": True}, content

    def _body(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "result": self.data}
        return {"ok": False, "error": {"code": self.error_code, "message": self.error}}


_TOOLS: dict[str, Tool] = {}


class ToolSource(Protocol):
    """Tools kept outside the code (e.g. an MCP server's snapshot), under a key prefix."""

    def tool(self, key: str) -> Tool | None:
        """The usable tool with this key, or None (unknown, or held back)."""

    def tools(self, keys: list[str] | None = None) -> list[Tool]:
        """The usable tools (None: all of them; else those of `keys`, in any order)."""

    def problems(self, keys: list[str]) -> dict[str, str]:
        """Why each of `keys` that is not usable is not (an unknown key included)."""


_SOURCES: dict[str, ToolSource] = {}


def source_register(prefix: str, source: ToolSource) -> None:
    """Let `source` answer for every key that starts with `prefix` (e.g. "mcp.")."""
    _SOURCES[prefix] = source


def _source_of(key: str) -> ToolSource | None:
    return next((s for prefix, s in _SOURCES.items() if key.startswith(prefix)), None)


def register(tool: Tool) -> Tool:
    """Add a tool to the allowlist; a key can be registered once."""
    if tool.key in _TOOLS and _TOOLS[tool.key] is not tool:
        raise ValueError(f"tool key {tool.key!r} is already registered")
    _TOOLS[tool.key] = tool
    return tool


def tool(
    key: str,
    description: str,
    parameters: dict[str, Any],
    *,
    permission: str | None = None,
    side_effect: bool = False,
    offline_rule: Callable[[str], dict[str, Any] | None] | None = None,
    offline_priority: int = 100,
    approval: bool = False,
    repeatable: bool | None = None,
    title: Any = "",
    summarize: Callable[[dict[str, Any], Any], str] | None = None,
    outside: bool = False,
) -> Callable[[Callable[[ToolContext, dict[str, Any]], Any]], Tool]:
    """Decorator form of `register` for a handler function."""

    def wrap(handler: Callable[[ToolContext, dict[str, Any]], Any]) -> Tool:
        return register(
            Tool(
                key,
                description,
                parameters,
                handler,
                permission,
                side_effect,
                offline_rule,
                offline_priority,
                approval=approval,
                repeatable=repeatable,
                title=title,
                summarize=summarize,
                outside=outside,
            )
        )

    return wrap


def offline_rule_set(
    key: str,
    rule: Callable[[str], dict[str, Any] | None],
    *,
    priority: int = 100,
    claims_words: bool = False,
) -> None:
    """Give a registered tool its offline-model rule (for tools registered without one);
    `claims_words`: what the rule reads is the holding agent's own work (Tool.claims_words)."""
    registered = _TOOLS[key]
    _TOOLS[key] = replace(
        registered, offline_rule=rule, offline_priority=priority, claims_words=claims_words
    )


def tool_claiming(text: str, names: Any) -> tuple[str, dict[str, Any]] | None:
    """(function name, arguments) of the first tool among `names` (keys or function names)
    that claims the words (Tool.claims_words and its rule reads them), or None."""
    for registered in sorted(_TOOLS.values(), key=lambda t: t.offline_priority):
        if not registered.claims_words or registered.offline_rule is None:
            continue
        if registered.key in names or registered.name in names:
            arguments = registered.offline_rule(text)
            if arguments is not None:
                return registered.name, arguments
    return None


def offline_rules() -> list[tuple[str, Callable[[str], dict[str, Any] | None]]]:
    """(function name, rule) of every tool with an offline rule, most specific first."""
    ruled = [t for t in _TOOLS.values() if t.offline_rule is not None]
    ruled.sort(key=lambda t: t.offline_priority)
    return [(t.name, t.offline_rule) for t in ruled if t.offline_rule is not None]


# Answers the offline model gives once tools answered, for messages a feature recognises (a
# watch's check asks for a JSON finding): each gets the messages, None when not its message.
_OFFLINE_ANSWERERS: list[Callable[[list[dict[str, Any]]], str | None]] = []


def offline_answerer_add(answerer: Callable[[list[dict[str, Any]]], str | None]) -> None:
    """Register an offline-model answer for messages a feature recognises (once)."""
    if answerer not in _OFFLINE_ANSWERERS:
        _OFFLINE_ANSWERERS.append(answerer)


def offline_answer(messages: list[dict[str, Any]]) -> str | None:
    """The first registered offline answer to these messages, or None."""
    return next((a for a in (f(messages) for f in _OFFLINE_ANSWERERS) if a is not None), None)


def get_tool(key: str) -> Tool | None:
    """The usable tool with this key, or None."""
    source = _source_of(key)
    return source.tool(key) if source is not None else _TOOLS.get(key)


def all_tools() -> list[Tool]:
    """Every usable tool, the code's and the sources', sorted by key."""
    found = [*_TOOLS.values(), *(t for s in _SOURCES.values() for t in s.tools())]
    return sorted(found, key=lambda t: t.key)


def key_problems(keys: list[str]) -> dict[str, str]:
    """Why each key of `keys` that cannot be used now cannot (unknown, or held by its source)."""
    problems = {k: "unknown" for k in keys if _source_of(k) is None and k not in _TOOLS}
    for source in _SOURCES.values():
        problems |= source.problems([k for k in keys if _source_of(k) is source])
    return problems


def unknown_keys(keys: list[str]) -> list[str]:
    """The keys in `keys` that neither the code nor a source knows."""
    problems = key_problems(keys)
    return [k for k in keys if problems.get(k) == "unknown"]


def tools_for(keys: list[str], user: Any) -> list[Tool]:
    """An agent's effective tools: its keys ∩ the registry ∩ what the end user may use (in
    the order of `keys`; a key its source holds back is skipped as an unknown one is)."""
    found: dict[str, Tool] = {k: _TOOLS[k] for k in keys if k in _TOOLS}
    for source in _SOURCES.values():
        mine = [k for k in keys if _source_of(k) is source]
        if mine:
            found |= {t.key: t for t in source.tools(mine)}
    for key in keys:
        if key not in found:
            logger.warning("agent lists tool key %r that is unknown or held back; skipped", key)
    return [found[k] for k in keys if k in found and found[k].allowed_for(user)]


def execute(registered: Tool, context: ToolContext, raw_arguments: str) -> ToolResult:
    """Parse and validate the model's arguments, then run the handler; never raises."""
    try:
        arguments = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolResult(
            False,
            error_code="invalid_json",
            error=_("Arguments are not JSON: %(problem)s") % {"problem": exc},
        )
    if not isinstance(arguments, dict):
        return ToolResult(
            False, error_code="invalid_arguments", error=_("Arguments must be an object.")
        )
    problems = sorted(registered.validator.iter_errors(arguments), key=lambda e: list(e.path))
    if problems:
        whole = _("(arguments)")  # a problem of no one field
        text = "; ".join(
            f"{'/'.join(map(str, p.path)) or whole}: {p.message}" for p in problems[:5]
        )
        return ToolResult(False, error_code="invalid_arguments", error=text)
    try:
        return ToolResult(True, data=registered.handler(context, arguments))
    except ToolError as exc:
        return ToolResult(False, error_code=exc.code, error=str(exc))
    except Exception:
        logger.exception("tool %s failed", registered.key)
        return ToolResult(False, error_code="tool_failed", error=_("The tool failed unexpectedly."))
