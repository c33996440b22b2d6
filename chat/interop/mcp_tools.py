"""The MCP server's tools: one per entry agent the caller may use, answered by a whole turn."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from redis.exceptions import RedisError

from agents.models import Agent
from agents.selectors import agent_entry_for
from chat.interop.sending import wait_before_sending
from chat.interop.turn_stream import TurnStream
from chat.selectors import access_session
from config.errors import AppError
from delegation.turns.start import clean_text

CALLER_KEY = "platform.mcp_caller"  # the ASGI scope key the endpoint puts the caller under


@dataclass(frozen=True)
class Caller:
    """Who calls (the API token's user) and the language they read."""

    user: Any
    language: str


@dataclass(frozen=True)
class EntryTool:
    """The tool standing for the entry agent, as the caller reads it."""

    name: str
    title: str
    description: str


def input_schema() -> dict[str, Any]:
    """The tool's arguments: a question, and optionally a session of the caller's to go on with."""
    return {
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "minLength": 1,
                "maxLength": settings.CHAT_MAX_MESSAGE_CHARS,
                "description": "What to ask, in the user's words (English or Chinese).",
            },
            "session_id": {
                "type": "string",
                "format": "uuid",
                "description": "Continue this earlier conversation (the session_id of a result).",
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    }


def tool_name(agent: Agent) -> str:
    """`ask_<agent name>`, in the characters tool names allow."""
    return "ask_" + re.sub(r"[^A-Za-z0-9_-]", "_", agent.name)


def entry_tool_for(*, user: Any, language: str) -> EntryTool:
    """The entry agent's tool if the user may use it, its experts named in the description;
    else the AppError of agent_entry_for."""
    agent = agent_entry_for(user=user)
    experts = agent.allowed_subagents.filter(enabled=True).order_by("name")
    lines = [f"Ask {agent.name_in(language)}. {agent.description_in(language)}".strip()]
    lines += [
        f"- {e.name_in(language)}: {e.description_in(language)}".rstrip(": ") for e in experts
    ]
    if len(lines) > 1:
        lines.insert(1, "Its experts:")
    lines.append("Returns the answer and a session_id; pass it back to ask a follow-up.")
    return EntryTool(
        name=tool_name(agent), title=agent.name_in(language), description="\n".join(lines)
    )


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller the endpoint authenticated for this HTTP request."""
    caller = ctx.request.scope.get(CALLER_KEY) if ctx.request is not None else None
    if not isinstance(caller, Caller):  # only reachable if mounted without the endpoint
        raise MCPError(types.INVALID_REQUEST, "Not authenticated.")
    return caller


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    """The entry agent's tool, or none for a caller who may not use it."""
    caller = caller_of(ctx)
    try:
        tool = await database_sync_to_async(entry_tool_for)(
            user=caller.user, language=caller.language
        )
    except AppError:
        return types.ListToolsResult(tools=[])
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                title=tool.title,
                description=tool.description,
                input_schema=input_schema(),
                annotations=types.ToolAnnotations(read_only_hint=False, open_world_hint=False),
            )
        ]
    )


def tool_error(message: str, session_id: uuid.UUID | None = None) -> types.CallToolResult:
    """A failed call as the calling model reads it: the plain message (and the session)."""
    text = message if session_id is None else f"{message}\n\nsession_id: {session_id}"
    structured = {"error": message, "session_id": str(session_id) if session_id else None}
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured, is_error=True
    )


@dataclass(frozen=True)
class Question:
    """A call's checked arguments."""

    text: str
    session_id: uuid.UUID | None


def question_of(arguments: dict[str, Any] | None) -> Question:
    """The arguments checked (AppError `invalid`, `empty_message`, `message_too_long`)."""
    arguments = arguments or {}
    unknown = sorted(set(arguments) - {"question", "session_id"})
    if unknown:
        raise AppError("invalid", _("Unknown arguments: %s.") % ", ".join(unknown))
    text = arguments.get("question")
    if not isinstance(text, str):
        raise AppError("invalid", _("The argument “question” (text) is required."))
    session_id = arguments.get("session_id")
    if session_id in (None, ""):
        return Question(clean_text(text), None)
    try:
        return Question(clean_text(text), uuid.UUID(str(session_id)))
    except ValueError:
        raise AppError(
            "invalid", _("“session_id” must be a UUID from an earlier result.")
        ) from None


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    """Ask the entry agent (in a new session or one of the caller's own) and wait for its
    answer, reporting each expert it asks as progress."""
    caller = caller_of(ctx)
    with translation.override(caller.language):
        try:
            tool = await database_sync_to_async(entry_tool_for)(
                user=caller.user, language=caller.language
            )
            if params.name != tool.name:
                raise MCPError(types.INVALID_PARAMS, _("Unknown tool: %s.") % params.name)
            question = question_of(params.arguments)
            if question.session_id is not None:  # another user's is answered as a missing one
                await database_sync_to_async(access_session)(caller.user, question.session_id)
        except AppError as exc:
            return tool_error(exc.message)
        try:
            wait = await database_sync_to_async(wait_before_sending)(caller.user)
        except RedisError:  # the rate's counters live in Redis: an outage, retry shortly
            return tool_error(_("A service this needs is unreachable for a moment; retry shortly."))
        if wait is not None:  # the REST API's `send` rate counts these messages too
            return tool_error(_("Too many messages; try again in %d s.") % round(wait))
        session_id = question.session_id or uuid.uuid4()
        try:
            return await ask(ctx, caller, session_id, question.text)
        except AppError as exc:  # refused at the start (a turn still running, a budget…)
            return tool_error(exc.message, session_id if question.session_id else None)


async def ask(
    ctx: ServerRequestContext[Any, Any], caller: Caller, session_id: uuid.UUID, text: str
) -> types.CallToolResult:
    """One turn from the message to the entry agent's end, translated for MCP."""
    progress = Progress(ctx)
    answer = Answer(session_id)
    async with TurnStream(
        user=caller.user, session_id=session_id, text=text, language=caller.language
    ) as turn:
        async for event in turn.events():
            if event is None:
                continue
            if event.get("type") == "delegation.started":
                await progress.expert_asked(event.get("data") or {})
            elif event.get("type") == "run.progress":
                await progress.expert_said(event.get("agent") or {}, event.get("data") or {})
            answer.read(event)
    return answer.result()


class Progress:
    """Progress notifications for the call's progress token (none if the client sent none)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self.ctx = ctx
        self.token = (ctx.meta or {}).get("progress_token")
        self.count = 0

    async def expert_asked(self, data: dict[str, Any]) -> None:
        """Report that an expert started: "Asking Finance expert…"."""
        name = data.get("display_name") or data.get("target") or _("an expert")
        await self.send(data.get("summary") or _("Asking %s…") % name)

    async def expert_said(self, agent: dict[str, Any], data: dict[str, Any]) -> None:
        """Report a remote expert's own status: "Translator: Translating…"."""
        name = agent.get("display_name") or agent.get("name") or _("an expert")
        await self.send(f"{name}: {data.get('text') or ''}")

    async def send(self, message: str) -> None:
        """One notification, the count one higher than the last."""
        if self.token is None:
            return
        self.count += 1
        await self.ctx.session.send_progress_notification(
            self.token,
            float(self.count),
            message=message,
            related_request_id=str(self.ctx.request_id),  # on this call's stream, not the session's
        )


class Answer:
    """What the turn's events say the tool result is."""

    def __init__(self, session_id: uuid.UUID) -> None:
        self.session_id = session_id
        self.text = ""
        self.citations: list[dict[str, Any]] = []
        self.ended: dict[str, Any] | None = None
        self.waiting: dict[str, Any] | None = None

    def read(self, event: dict[str, Any]) -> None:
        """Keep the entry agent's last message and how its run ended (or why it waits)."""
        data = event.get("data") or {}
        depth = (event.get("agent") or {}).get("depth")
        if event.get("type") == "message.completed" and depth == 0:
            self.text, self.citations = data.get("text") or "", data.get("citations") or []
        elif event.get("type") == "run.completed" and depth == 0:
            self.ended = data
        elif event.get("type") == "run.waiting":
            self.waiting = data

    def result(self) -> types.CallToolResult:
        """The answer with its sources, or the plain error, or what it waits for."""
        if self.waiting is not None:
            who = self.waiting.get("waiting_for") or _("a person")
            message = _(
                "The answer waits for %(who)s; it is added to this session once they decide."
            ) % {"who": who}
            return self.content(message, status="waiting")
        if self.ended is None:  # the event stream broke off (a relay outage); the turn goes on
            message = _("The answer's stream was interrupted; the answer will be in this session.")
            return tool_error(message, self.session_id)
        status = self.ended.get("status") or "failed"
        if status != "succeeded":
            error = self.ended.get("error") or {}
            message = error.get("message") or _("The agent could not answer (%s).") % status
            return tool_error(message, self.session_id)
        return self.content(self.text + self.sources(), status=status)

    def sources(self) -> str:
        """A short "Sources:" list of the answer's citations."""
        if not self.citations:
            return ""
        lines = [f"[{c.get('ref')}] {c.get('title') or ''}".rstrip() for c in self.citations]
        return "\n\n" + _("Sources:") + "\n" + "\n".join(lines)

    def content(self, text: str, *, status: str) -> types.CallToolResult:
        """A successful result carrying the session id to continue with."""
        session = str(self.session_id)
        return types.CallToolResult(
            content=[types.TextContent(text=f"{text}\n\nsession_id: {session}")],
            structured_content={"answer": text, "session_id": session, "status": status},
        )


def build_server() -> Server[Any]:
    """The MCP server answering tools/list and tools/call."""
    return Server(
        "agent-platform",
        title="Agent platform",
        instructions="Ask the platform's agents; each tool is one agent with its experts.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
