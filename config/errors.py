"""The application error type, its code catalog, and the DRF handler giving errors one shape."""

from __future__ import annotations

import logging
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

# Every error code a client can see (REST, websocket `error` events, run errors, tool results).
# docs/protocol.md documents each one; tests keep the two in step.
ERROR_CODES: dict[str, str] = {
    # frames and requests
    "bad_frame": "A binary websocket frame; send JSON text.",
    "bad_json": "The frame is not a JSON object.",
    "frame_too_large": "The frame is over WS_MAX_FRAME_BYTES; it was not parsed.",
    "unknown_type": "The frame's type is not one the server accepts.",
    "invalid": "A field is missing or malformed; details name the fields.",
    "empty_message": "The message text is empty.",
    "message_too_long": "The message text is over CHAT_MAX_MESSAGE_CHARS.",
    "invalid_timezone": "The timezone is not an IANA name.",
    # objects and access
    "session_not_found": "No such session, or it belongs to someone else.",
    "run_not_found": "No such run, or it belongs to someone else.",
    "token_not_found": "No such API token, or it belongs to someone else.",
    "agent_not_found": "No such agent, or the user may not use it.",
    "message_id_conflict": "The message id is already used by another message.",
    "message_not_found": "No such message in the session, or it belongs to someone else.",
    "message_superseded": "The message was replaced by a newer version (tried again or edited).",
    "session_id_conflict": "The session id is already used by someone else's session.",
    "turn_in_progress": "The session's previous turn is still running.",
    "no_entry_agent": "No enabled entry agent is configured.",
    "agent_forbidden": "The user may not use this agent.",
    # runs and models
    "model_timeout": "The model did not answer within OPENAI_TIMEOUT.",
    "model_rate_limited": "The model service kept answering 429.",
    "model_auth": "The model service refused the credentials.",
    "model_unavailable": "The model service is unreachable or answered 5xx.",
    "model_error": "The model service refused the request or sent a malformed answer.",
    "model_misconfigured": "The agent's provider settings cannot work (e.g. no API key).",
    "run_timeout": "The run went past its deadline.",
    "budget_exhausted": "The turn used every model call of its budget.",
    "budget_exceeded": "The model call would pass a money budget (turn, user or agent).",
    "stream_interrupted": "The live event relay failed; reconnect to resume.",
    "internal_error": "An unexpected server error; it is logged.",
    "service_unavailable": "A service the request needs (Redis, the broker) is unreachable.",
    # REST API (see docs/api.md)
    "not_authenticated": "No credentials were sent.",
    "authentication_failed": "The token or session is invalid.",
    "permission_denied": "The user may not do this (e.g. staff only).",
    "not_found": "No such object.",
    "method_not_allowed": "The HTTP method is not allowed here.",
    "unsupported_media_type": "Send JSON.",
    "parse_error": "The body is not valid JSON.",
    "throttled": "Too many requests; retry after the given seconds.",
    "not_acceptable": "The Accept header asks for a format the API does not serve.",
    # evals (see docs/evals.md)
    "publish_held": "A publish gate held the agent save as a draft until its evals pass.",
    "eval_suite_empty": "The eval suite has no enabled case to run.",
    # delegation (tool results of `delegate`, shown to the user in delegation.completed)
    "delegation_unknown_target": "No agent has that name.",
    "delegation_not_allowed": "The caller may not delegate to that agent.",
    "delegation_unavailable": "The target is disabled or not delegatable.",
    "delegation_cycle": "The target is already on the delegation path.",
    "delegation_depth": "The delegation would exceed the depth limit.",
    "delegation_forbidden": "The end user may not use the target agent.",
    "delegation_budget": "The turn has used its delegations.",
    "delegation_failed": "The expert failed; the message says why.",
    "delegation_timed_out": "The expert did not answer in time.",
    "delegation_cancelled": "The expert was stopped.",
    # knowledge (REST uploads and searches; see docs/knowledge.md)
    "knowledge_base_not_found": "No such knowledge base.",
    "document_not_found": "No such document in this knowledge base.",
    "unsupported_file": "The file type is not accepted (knowledge: md, txt, html, pdf, docx; "
    "voice: audio).",
    "empty_file": "The uploaded file is empty.",
    "file_too_large": "The file is over KNOWLEDGE_MAX_FILE_BYTES (or VOICE_MAX_UPLOAD_BYTES).",
    "duplicate_document": "The same file (same content hash) is already in the knowledge base.",
    "empty_query": "The search query has no words to look for.",
    "query_too_long": "The search query is over KNOWLEDGE_MAX_QUERY_CHARS.",
    # voice (see docs/voice.md)
    "voice_not_configured": "Speech to text (STT_MODEL) or text to speech (TTS_MODEL) is off.",
    "voice_unavailable": "The speech server is unreachable or refused the request.",
    "voice_timeout": "The speech server did not answer within VOICE_TIMEOUT.",
    "speech_too_long": "The message is over TTS_MAX_CHARS characters to read aloud.",
    # humans in the loop (see docs/humans.md)
    "inbox_item_not_found": "No such inbox item, or one the user may not see.",
    "review_not_found": "No such review, or one the user may not see.",
    "already_decided": "Someone decided first (or the wait ended); nothing was changed.",
    "human_declined": "Tool result: the person asked declined to answer.",
    "human_no_answer": "Tool result: no person answered before the deadline.",
    "human_cancelled": "Tool result: the user cancelled the wait.",
    "tool_rejected": "Tool result: a staff member rejected the tool call; it did not run.",
    "answer_invalid": "An expert's answer was judged invalid and could not be improved.",
    "wait_cycle": "The run's waits formed a cycle; the oldest waiter was timed out.",
    # tool results (inside tool.result, for the model to correct)
    "invalid_json": "The model's tool arguments are not JSON.",
    "invalid_arguments": "The model's tool arguments do not match the tool's schema.",
    "unknown_tool": "The tool is not on this agent's list (or does not exist).",
    "tool_error": "The tool refused the request, with a reason.",
    "tool_failed": "The tool crashed; it is logged.",
    "tool_timeout": "Tool result: an outside tool (MCP) did not answer within its timeout.",
    "tool_unavailable": "Tool result: an outside tool's server is unreachable or stopped.",
    "tool_not_repeated": "Tool result: a call that may have run was not made again.",
    "tool_needs_connection": "Tool result: the user has not connected their own account for "
    "this per-user MCP server.",
    "tool_budget": "Tool result: the turn made every outside tool call TURN_MAX_TOOL_CALLS allows.",
    "mcp_unavailable": "The MCP server could not be reached or answered with an error.",
    "mcp_server_not_found": "No such MCP server.",
    "mcp_sync_not_found": "No such sync of this MCP server.",
    "conflict": "The object is not in a state that allows this (e.g. already decided).",
}


# The sentence of each `<what>_not_found` code (translated when raised, in the active language).
NOT_FOUND_MESSAGES: dict[str, str] = {
    "session": gettext_noop("No such session."),
    "run": gettext_noop("No such run."),
    "token": gettext_noop("No such token."),
    "agent": gettext_noop("No such agent."),
    "message": gettext_noop("No such message."),
    "knowledge_base": gettext_noop("No such knowledge base."),
    "document": gettext_noop("No such document."),
    "inbox_item": gettext_noop("No such inbox item."),
    "review": gettext_noop("No such review."),
    "mcp_server": gettext_noop("No such MCP server."),
    "mcp_sync": gettext_noop("No such MCP sync."),
}

logger = logging.getLogger(__name__)


class AppError(Exception):
    """An error a client should see: a stable code, a plain message, optional details.

    The code is the API contract and stays English; the message is for people, so callers
    pass it through gettext (it is in the language active when the error is raised)."""

    status = 400

    def __init__(
        self, code: str, message: str, *, details: Any = None, status: int | None = None
    ) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"undocumented error code {code!r}: add it to ERROR_CODES")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        if status is not None:
            self.status = status

    def as_dict(self) -> dict[str, Any]:
        """The `{"code", "message", "details"}` body shared by REST and websocket errors."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


class NotFound(AppError):
    """A missing object, or one the user may not see (the two are indistinguishable on purpose)."""

    status = 404

    def __init__(self, what: str) -> None:
        if what not in NOT_FOUND_MESSAGES:
            raise ValueError(f"no sentence for {what!r}: add it to NOT_FOUND_MESSAGES")
        super().__init__(f"{what}_not_found", _(NOT_FOUND_MESSAGES[what]))


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """Render every API error as `{"error": {"code", "message", "details"}}`."""
    if isinstance(exc, AppError):
        return Response({"error": exc.as_dict()}, status=exc.status)
    if isinstance(exc, (RedisError, BrokerError)):  # an outage, not a bug: retry shortly
        logger.warning("API request failed: %s unreachable: %s", type(exc).__name__, exc)
        message = _("A service this needs is unreachable for a moment; retry shortly.")
        body = {"code": "service_unavailable", "message": message}
        return Response({"error": body}, status=503, headers={"Retry-After": "5"})
    response = drf_exception_handler(exc, context)
    if response is None:  # not an API exception: a bug; logged, answered in the same shape
        logger.exception("API request failed", exc_info=exc)
        body = {"code": "internal_error", "message": _("Something went wrong on our side.")}
        return Response({"error": body}, status=500)
    if isinstance(exc, drf_exceptions.ValidationError):
        message = _("Some fields are invalid.")
        body = {"code": "invalid", "message": message, "details": response.data}
    else:
        code = getattr(exc, "default_code", "")
        body = {
            "code": code if code in ERROR_CODES else "invalid",
            "message": _throttled(exc) or str(getattr(exc, "detail", "")),
        }
    response.data = {"error": body}
    return response


def _throttled(exc: Exception) -> str:
    """DRF's throttling sentence, translated whole (DRF formats its second half before
    translating it, so that half stays English); "" for any other error."""
    if not isinstance(exc, drf_exceptions.Throttled):
        return ""
    wait = getattr(exc, "wait", None)  # DRF's whole seconds (None: no estimate)
    if wait is None:
        return _("Request was throttled.")
    return ngettext(
        "Request was throttled. Expected available in %(wait)s second.",
        "Request was throttled. Expected available in %(wait)s seconds.",
        wait,
    ) % {"wait": wait}
