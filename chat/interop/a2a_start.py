"""A message's turn, started before the SDK files its task: the turn's run id is the task id."""

from __future__ import annotations

import logging
from typing import Any

from a2a.helpers.proto_helpers import get_message_text
from a2a.server.agent_execution import RequestContext, RequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import SendMessageRequest, Task, TaskState, TaskStatus
from a2a.utils.errors import (
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    UnsupportedOperationError,
)
from channels.db import database_sync_to_async
from django.conf import settings
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError

from agents.providers.a2a_provider import HOPS_KEY
from chat.interop.a2a_tasks import RunTaskStore, caller_of, session_for_context
from chat.interop.sending import wait_before_sending
from chat.interop.turn_stream import TurnStream
from chat.relay import LAYER_ERRORS
from config.errors import AppError

logger = logging.getLogger(__name__)
TURN_KEY = "agent_platform.turn"  # the call context's started TurnStream, for the executor
LANGUAGE_KEY = "agent_platform.language"  # the caller's Accept-Language, as the page's


class TurnStarter(RequestContextBuilder):
    """Starts the message's turn as the caller (rights, budgets, approvals as on the page) in
    the session its context id maps to, and hands the followed turn to the executor."""

    def __init__(self, store: RunTaskStore) -> None:
        self.store = store

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        """The request context of a new task whose id is the turn's run id."""
        if params is None:
            raise InvalidRequestError(message="A message is required.")
        if task_id:  # our waits end when a person decides on the platform, not by a reply
            raise UnsupportedOperationError(
                message="A task takes no further messages: one waiting for input resumes when "
                "a person decides on the platform. Send a new message (no taskId) instead."
            )
        text = get_message_text(params.message, "\n").strip()
        if not text:
            raise InvalidParamsError(message="The message needs a text part.")
        hops = _hops_within_bound(params.message)
        user = caller_of(context)
        await _within_send_rate(user)
        session_id = await database_sync_to_async(session_for_context)(
            user=user, context_id=context_id
        )
        turn = TurnStream(
            user=user,
            session_id=session_id,
            text=text,
            language=context.state[LANGUAGE_KEY],
            a2a_hops=hops,
        )
        await _start(turn)
        context.state[TURN_KEY] = turn
        request = RequestContext(
            call_context=context,
            request=params,
            task_id=turn.run_id,
            context_id=str(session_id),
        )
        status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
        status.timestamp.GetCurrentTime()
        started = Task(id=turn.run_id, context_id=str(session_id), status=status)
        started.history.append(params.message)
        self.store.follow(started)
        return request


def _hops_within_bound(message: Any) -> int:
    """The agent platforms the message came through (its `agent_platform_hops`, set by an
    agent platform that asks another, ours included); past A2A_MAX_HOPS it is refused, so
    two platforms whose agents ask each other stop there."""
    sent = message.HasField("metadata") and HOPS_KEY in message.metadata
    hops = message.metadata[HOPS_KEY] if sent else 0
    if isinstance(hops, bool) or not isinstance(hops, (int, float)) or hops < 0:
        raise InvalidParamsError(message=f"{HOPS_KEY} must be a count of agent platforms.")
    if hops >= settings.A2A_MAX_HOPS:
        raise InvalidRequestError(
            message=f"This message has come through {int(hops)} agent platforms already; "
            f"A2A_MAX_HOPS allows {settings.A2A_MAX_HOPS}.",
            data={"code": "a2a_hops_exceeded", "hops": int(hops)},
        )
    return int(hops)


async def _within_send_rate(user: Any) -> None:
    """The REST API's `send` rate counts these messages too (an A2A error past it)."""
    try:
        wait = await database_sync_to_async(wait_before_sending)(user)
    except RedisError:
        raise InternalError(message="A service is unreachable for a moment; retry.") from None
    if wait is not None:
        raise InvalidRequestError(
            message=f"Too many messages; try again in {round(wait)} s.",
            data={"code": "rate_limit_exceeded", "retry_after": round(wait)},
        )


async def _start(turn: TurnStream) -> None:
    """Start the turn; the platform's refusals become A2A errors (nothing is kept)."""
    try:
        await turn.start()
    except AppError as exc:
        raise InvalidRequestError(message=exc.message, data=_details(exc)) from None
    except (*LAYER_ERRORS, RedisError, BrokerError):
        logger.warning("A2A: a turn could not start", exc_info=True)
        raise InternalError(message="A service is unreachable for a moment; retry.") from None


def _details(exc: AppError) -> dict[str, Any]:
    return {"code": exc.code, "status": exc.status}
