"""The OpenAI-compatible API: `GET models` and `POST chat/completions` run our agents' turns."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError
from rest_framework import exceptions

from agents.models import Agent
from agents.selectors import agent_entry_for
from chat.interop.openai_answer import Answer
from chat.interop.openai_request import (
    CompletionRequest,
    RequestRefused,
    completion_request,
    session_for,
)
from chat.interop.sending import wait_before_sending
from chat.interop.turn_stream import TurnStream
from chat.models import ChatSession
from chat.relay import LAYER_ERRORS
from chat.sse import STREAM_BROKEN
from chat.tokens import ApiTokenAuthentication
from config.errors import AppError

logger = logging.getLogger(__name__)
OWNER = "agent-platform"
STREAM_BROKE = gettext_noop("The live event stream broke; the turn goes on and is saved.")


def _unavailable() -> JsonResponse:
    """503 with Retry-After: Redis or the broker is unreachable for a moment."""
    message = _("A service this needs is unreachable for a moment; retry shortly.")
    response = _error(503, message, "service_unavailable")
    response["Retry-After"] = "5"
    return response


def _error(status: int, message: str, code: str, *, param: str | None = None) -> JsonResponse:
    """OpenAI's error body, which its clients read and raise from."""
    kind = {401: "authentication_error", 403: "permission_error", 404: "invalid_request_error"}
    body = {"message": message, "type": kind.get(status, "invalid_request_error"), "param": param}
    error_type = "server_error" if status >= 500 else body["type"]
    return JsonResponse({"error": {**body, "type": error_type, "code": code}}, status=status)


async def _caller(request: HttpRequest) -> Any:
    """The API token's user; AuthenticationFailed when missing or wrong (no session cookies:
    this door is for programs)."""
    found = await database_sync_to_async(ApiTokenAuthentication().authenticate)(request)
    if not found:
        raise exceptions.AuthenticationFailed(_("Send an API token: Authorization: Bearer …"))
    return found[0]


def _entry_agent(user: Any) -> Agent | None:
    """The entry agent if this user may use it."""
    try:
        return agent_entry_for(user=user)
    except AppError:
        return None


def _model(agent: Agent) -> dict[str, Any]:
    return {
        "id": agent.name,
        "object": "model",
        "created": int(agent.created_at.timestamp()) if agent.created_at else 0,
        "owned_by": OWNER,
        "x_display_name": agent.display_name,
    }


@require_GET
async def models(request: HttpRequest) -> HttpResponse:
    """GET: the agents the caller may ask (the entry agent, where it is open to them)."""
    try:
        user = await _caller(request)
    except exceptions.AuthenticationFailed as exc:
        return _error(401, str(exc.detail), "invalid_api_key")
    agent = await database_sync_to_async(_entry_agent)(user)
    return JsonResponse({"object": "list", "data": [_model(agent)] if agent else []})


@csrf_exempt
@require_POST
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    """POST: one turn of the named agent as a chat completion, streamed (SSE chunks) or whole.
    The session is the `X-Session-Id` header's or the `user` field's, else a new one."""
    try:
        user = await _caller(request)
    except exceptions.AuthenticationFailed as exc:
        return _error(401, str(exc.detail), "invalid_api_key")
    try:
        asked = completion_request(request.body)
        session_id = session_for(asked, user_pk=user.pk, header=request.headers.get("X-Session-Id"))
    except RequestDataTooBig:
        return _error(413, _("The request is too large."), "request_too_large")
    except RequestRefused as exc:
        return _error(400, exc.message, "invalid_request_error", param=exc.param)
    try:
        wait = await database_sync_to_async(wait_before_sending)(user)
    except RedisError:  # the rate's counters live in Redis: an outage, retry shortly
        return _unavailable()
    if wait is not None:
        refused = _error(429, _("Too many messages; try again shortly."), "rate_limit_exceeded")
        refused["Retry-After"] = str(max(1, round(wait)))
        return refused
    agent = await database_sync_to_async(_entry_agent)(user)
    if agent is None or agent.name != asked.model:
        message = _("There is no agent %(model)s that you may use.") % {"model": asked.model}
        return _error(404, message, "model_not_found", param="model")
    fresh = session_id is None or not await _session_exists(session_id)
    turn = TurnStream(
        user=user,
        session_id=session_id or uuid.uuid4(),
        text=asked.text_for(fresh=fresh),
        language=translation.get_language(),
    )
    try:
        await turn.start()
    except AppError as exc:
        return _error(exc.status, exc.message, exc.code)
    except (*LAYER_ERRORS, RedisError, BrokerError):
        logger.warning("OpenAI API: a turn could not start", exc_info=True)
        return _unavailable()
    response: HttpResponseBase
    if asked.stream:
        response = StreamingHttpResponse(_chunks(turn, asked), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
    else:
        response = await _whole(turn, asked)
    response["X-Session-Id"] = str(turn.session_id)
    return response


@database_sync_to_async
def _session_exists(session_id: uuid.UUID) -> bool:
    return ChatSession.objects.filter(pk=session_id).exists()


def _head(turn: TurnStream, asked: CompletionRequest) -> dict[str, Any]:
    return {"id": f"chatcmpl-{turn.run_id}", "created": int(time.time()), "model": asked.model}


def _extension(turn: TurnStream, answer: Answer) -> dict[str, Any]:
    """Where the turn lives on the platform, and how it ended."""
    return {
        "session_id": str(turn.session_id),
        "run_id": turn.run_id,
        "status": "waiting" if answer.waiting_for else answer.status,
        "error": answer.error,
    }


async def _whole(turn: TurnStream, asked: CompletionRequest) -> HttpResponse:
    """Wait for the turn's end: the answer as one `chat.completion`."""
    answer = Answer()
    try:
        async for event in turn.events():
            if event is not None:
                answer.take(event)
    except STREAM_BROKEN:
        logger.warning("OpenAI API: the channel layer failed during run %s", turn.run_id)
        return _error(503, _(STREAM_BROKE), "stream_interrupted")
    finally:
        await turn.close()
    if not answer.text and answer.status != "succeeded":
        message = (answer.error or {}).get("message") or _("The agent could not answer.")
        return _error(502, message, (answer.error or {}).get("code") or "turn_failed")
    body = {
        **_head(turn, asked),
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer.text},
                "finish_reason": "stop",
            }
        ],
        "usage": answer.usage_body(),
        "x_agent_platform": _extension(turn, answer),
    }
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False})


async def _chunks(turn: TurnStream, asked: CompletionRequest) -> AsyncIterator[str]:
    """The answer as `chat.completion.chunk` events, then usage (if asked) and `[DONE]`; with
    `x_agent_events`, every event of the turn also goes out in a chunk of its own."""
    head, answer = {**_head(turn, asked), "object": "chat.completion.chunk"}, Answer()

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        body = {**head, "choices": choices if delta or finish else [], **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    try:
        yield chunk({"role": "assistant", "content": ""})
        async for event in turn.events():
            if event is None:
                yield ": keepalive\n\n"
                continue
            if asked.agent_events:
                yield chunk({}, x_agent_event=event)
            piece = answer.take(event)
            if piece:
                yield chunk({"content": piece})
        yield chunk({}, "stop", x_agent_platform=_extension(turn, answer))
        if asked.include_usage:
            yield chunk({}, usage=answer.usage_body())
        yield "data: [DONE]\n\n"
    except STREAM_BROKEN:
        logger.warning("OpenAI API: the channel layer failed during run %s", turn.run_id)
        error = {"message": _(STREAM_BROKE), "code": "stream_interrupted"}
        yield f"data: {json.dumps({'error': error}, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        await turn.close()
