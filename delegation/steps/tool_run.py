"""Running one ordinary tool call (not a delegation, not waiting for a person): its attempt
mark, its progress events, the turn's budget of outside calls, and its result message."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from agents.registry import Tool, ToolContext, ToolResult, execute
from agents.tool_labels import call_running, call_summary
from agents.tool_questions import question_of
from chat.models import ChatMessage, MessageRole, MessageStatus
from chat.services import message_upsert
from delegation.models import Run
from delegation.runs.emitter import RunEmitter
from delegation.runs.hooks import HOOKS
from delegation.runs.transcript import arguments_shown
from delegation.steps.citations import CITED_TOOLS, references_number
from delegation.steps.observed import tool_span, tool_span_result
from delegation.tree.budget import budget_take_tool_call

PROGRESS_EVERY_SECONDS = 0.25
PROGRESS_NOTE_CHARS = 200


def attempt_started(message_id: uuid.UUID) -> bool:
    """Whether a call still pending in the transcript has its tool message already: it was
    started (it may have run, even if its message completed before the transcript was saved),
    or a person was asked about it (whose answer stands)."""
    return ChatMessage.objects.filter(pk=message_id).exists()


def tool_run(
    run: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    tools: dict[str, Tool],
    *,
    mark_attempt: bool,
) -> str | None:
    """Run one ordinary tool call and report it; the result content for the model, or None
    when the tool put a question to the user (the run waits; docs/tools.md). A call not safe
    to repeat (`mark_attempt`) leaves its message, saved, before it runs: a crash during it is
    then known on resume."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    shown_arguments = arguments_shown(raw)
    registered = tools.get(name)
    shown = {
        "call_id": call["id"],
        "name": name,
        "arguments": shown_arguments,
        "summary": call_running(registered, name),
    }
    if mark_attempt:
        tool_message_save(run, emitter, message_id, MessageStatus.STREAMING, shown)
    emitter.emit("tool.called", message_id, **shown)
    with tool_span(run, call, registered) as span:
        result = _result(run, emitter, call, message_id, registered, tools)
        if registered is not None and registered.outside:
            outside_call_logged(run, registered, result)
        outcome, content = result.rendered()  # what people see is bounded as the model's is
        tool_span_result(span, result, content)
    summary = call_summary(registered, name, shown_arguments, outcome)
    told = {**shown, **outcome, "summary": summary}
    if registered is not None and result.ok and asks_user(registered, result.data):
        # The user answers (buttons), then the call runs again with the answer, once.
        tool_message_save(run, emitter, message_id, MessageStatus.STREAMING, told)
        return HOOKS.person_call(run, emitter, call, message_id, tools)
    tool_message_save(run, emitter, message_id, MessageStatus.COMPLETED, told)
    emitter.emit("tool.result", message_id, **told)
    return content


def _result(
    run: Run,
    emitter: RunEmitter,
    call: dict[str, Any],
    message_id: uuid.UUID,
    registered: Tool | None,
    tools: dict[str, Tool],
) -> ToolResult:
    """What one ordinary tool call comes to: refused for want of the turn's budget of outside
    calls, unknown, or the tool's own result."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    if (
        registered is not None
        and registered.outside
        and not budget_take_tool_call(root=run.root_or_self)
    ):
        return budget_refusal(run)
    if registered is None:
        return ToolResult(
            False,
            error_code="unknown_tool",
            error=_("There is no tool named %(name)s available to you. Available: %(tools)s.")
            % {"name": repr(name), "tools": ", ".join(sorted(tools)) or _("none")},
        )
    context = ToolContext(
        user=run.user,
        session=run.session,
        run=run,
        agent=run.agent,
        call_id=call["id"],
        progress=tool_progress(emitter, message_id, call["id"], name),
    )
    result = execute(registered, context, raw)
    if result.ok and name in CITED_TOOLS and isinstance(result.data, dict):
        return ToolResult(True, data=references_number(run, result.data))
    return result


def asks_user(registered: Tool, data: object) -> bool:
    """Whether a result is a question for the user the engine can put (and feed back): the
    tool takes `confirm`, or the argument the answer fills. A tool that reaches outside the
    platform never asks: what an MCP server or a web page says is data, not a question."""
    if registered.outside:
        return False
    question = question_of(data)
    if question is None:
        return False
    takes = set((registered.parameters.get("properties") or {}).keys())
    return ("confirm" if question.accept else question.answer_into) in takes


def person_asked(message_id: uuid.UUID) -> bool:
    """Whether a person was asked about this call already (its message shows whom it waits
    for): its result comes from their answer, never from running it again unasked."""
    return ChatMessage.objects.filter(pk=message_id, tool__has_key="human").exists()


def tool_progress(
    emitter: RunEmitter, message_id: uuid.UUID, call_id: str, name: str
) -> Callable[[float, float | None, str | None], None]:
    """What a long tool call reports its progress to: `tool.progress` events, at most one per
    PROGRESS_EVERY_SECONDS (the last step always shows)."""
    last = [0.0]

    def report(value: float, total: float | None, note: str | None) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_SECONDS and (total is None or value < total):
            return
        last[0] = now
        emitter.emit(
            "tool.progress",
            message_id,
            call_id=call_id,
            name=name,
            progress=value,
            total=total,
            message=(note or "")[:PROGRESS_NOTE_CHARS],
        )

    return report


def tool_message_save(
    run: Run, emitter: RunEmitter, message_id: uuid.UUID, status: str, tool: dict[str, Any]
) -> None:
    """Save (insert or update) a call's tool message of the run as `tool` shows it."""
    message_upsert(
        message_id=message_id,
        session_id=run.session_id,
        role=MessageRole.TOOL,
        run_id=run.id,
        agent=emitter.tag,
        status=status,
        tool=tool,
    )


def budget_refusal(run: Run) -> ToolResult:
    """The result of an outside call the turn has no budget left for."""
    limit = (run.root_or_self.budget or {}).get("max_tool_calls", settings.TURN_MAX_TOOL_CALLS)
    return ToolResult(
        False,
        error_code="tool_budget",
        error=_(
            "This turn has made all the calls of outside tools it may (%(limit)s); answer "
            "with what you have."
        )
        % {"limit": limit},
    )


def outside_call_logged(run: Run, registered: Tool, result: ToolResult) -> None:
    """One activity row for a call that reached outside the platform (an audit of who asked
    which system for what, and how it went)."""
    outcome = "ok" if result.ok else f"{result.error_code}: {result.error[:200]}"
    HOOKS.activity(
        kind="tool_called",
        run=run,
        summary=f"{run.agent_config['display_name']} called {registered.key}: {outcome}",
        data={"tool": registered.key, "ok": result.ok, "error_code": result.error_code},
    )
