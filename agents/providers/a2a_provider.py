"""A remote A2A agent as a model: its task's answer streamed as text, through the a2a-sdk client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from django.conf import settings

from agents.providers.base import ModelRequest, ProviderError, ProviderEvent, TextDelta

CANCEL_SECONDS = 5.0  # how long a stopped delegation waits for the remote to take its cancel


class A2AProvider:
    """Asks the remote agent whose card is at the agent's base URL, as one A2A task: the
    delegated task's text goes out as the message; the answer's chunks (and status messages)
    come back as text. A stopped or timed-out delegation cancels the remote task."""

    name = "a2a"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the remote answer's text as it streams; ProviderError on any failure."""
        if not request.base_url:
            message = "A remote A2A agent needs its base URL (where its agent card is served)."
            raise ProviderError("model_misconfigured", message)
        question = _question(request.messages)
        loop = asyncio.new_event_loop()  # this thread's own: a run's thread runs no loop
        answer = _ask(request.base_url, _headers(request), question)
        try:
            while True:
                try:
                    yield loop.run_until_complete(answer.__anext__())
                except StopAsyncIteration:
                    return
        finally:  # also when the run stops reading (stopped, timed out): cancel the remote task
            loop.run_until_complete(answer.aclose())
            loop.close()


def _headers(request: ModelRequest) -> dict[str, str]:
    """The bearer token from the agent's key variable, if it names one."""
    if not request.api_key_env:
        return {}
    key = os.environ.get(request.api_key_env, "")
    if not key:
        message = f"The environment variable {request.api_key_env} (this agent's key) is not set."
        raise ProviderError("model_misconfigured", message)
    return {"Authorization": f"Bearer {key}"}


def _question(messages: list[dict[str, Any]]) -> str:
    """The delegated task: the last user message's text."""
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    raise ProviderError("model_error", "There is no task to send to the remote agent.")


async def _ask(
    base_url: str, headers: dict[str, str], question: str
) -> AsyncGenerator[TextDelta, None]:
    """One A2A task's answer as text deltas (failures as ProviderError)."""
    import httpx
    from a2a.client import (
        A2ACardResolver,
        A2AClientError,
        A2AClientTimeoutError,
        ClientConfig,
        ClientFactory,
    )
    from a2a.types.a2a_pb2 import CancelTaskRequest, Message, Part, Role, SendMessageRequest

    timeout = httpx.Timeout(settings.A2A_TIMEOUT_SECONDS, connect=10.0)
    reader = _Reader()
    try:
        async with httpx.AsyncClient(headers=headers, timeout=timeout) as http:
            card = await A2ACardResolver(http, base_url).get_agent_card()
            config = ClientConfig(httpx_client=http, streaming=True)
            async with ClientFactory(config).create(card) as client:
                sent = Message(
                    message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=question)]
                )
                try:
                    async for event in client.send_message(SendMessageRequest(message=sent)):
                        for piece in reader.read(event):
                            yield TextDelta(piece)
                        if reader.ended:
                            break
                finally:
                    if reader.task_id and not reader.ended:
                        with contextlib.suppress(Exception):
                            cancel = client.cancel_task(CancelTaskRequest(id=reader.task_id))
                            await asyncio.wait_for(cancel, CANCEL_SECONDS)
    except (httpx.TimeoutException, A2AClientTimeoutError) as exc:
        raise ProviderError("model_timeout", "The remote agent did not answer in time.") from exc
    except (httpx.HTTPError, OSError, A2AClientError) as exc:
        raise _failure(exc) from exc
    if reader.failure:
        raise ProviderError("model_error", reader.failure)
    if not reader.ended:
        raise ProviderError("model_error", "The remote agent's stream ended before its task did.")


def _failure(exc: BaseException) -> ProviderError:
    """A failed exchange as the error a run reports: refused credentials, an unreachable or
    failing server, or an answer the protocol does not allow."""
    import httpx
    from a2a.client import AgentCardResolutionError

    cause = exc.__cause__ if exc.__cause__ is not None else exc
    status = getattr(exc, "status_code", None)
    if isinstance(cause, httpx.HTTPStatusError):
        status = cause.response.status_code
    if status in (401, 403):
        return ProviderError("model_auth", "The remote agent refused our credentials.")
    if status or isinstance(cause, (httpx.TransportError, OSError)):
        return ProviderError("model_unavailable", "The remote agent is unreachable or failing.")
    if isinstance(exc, AgentCardResolutionError):
        return ProviderError("model_error", "The remote agent's card could not be read.")
    return ProviderError("model_error", f"The remote agent's answer was refused: {exc}")


class _Reader:
    """The answer's text out of A2A stream events: artifact chunks (a final chunk that replaces
    them adds only what was not sent), a direct reply, or a whole task; how the task ended."""

    def __init__(self) -> None:
        self.task_id = ""
        self.sent = ""
        self.ended = False
        self.failure = ""

    def read(self, event: Any) -> list[str]:
        """The new text this stream event brings."""
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.ended = True
            return self._add(_text(event.message.parts), replace=False)
        if kind == "task":
            self.task_id = event.task.id
            whole = "".join(_text(a.parts) for a in event.task.artifacts)
            pieces = self._add(whole, replace=True)
            return pieces + self._status(event.task.status)
        if kind == "artifact_update":
            self.task_id = event.artifact_update.task_id
            update = event.artifact_update
            return self._add(_text(update.artifact.parts), replace=not update.append)
        if kind == "status_update":
            self.task_id = event.status_update.task_id
            return self._status(event.status_update.status)
        return []

    def _add(self, text: str, *, replace: bool) -> list[str]:
        if not replace or not self.sent:
            self.sent += text
            return [text] if text else []
        if text.startswith(self.sent) and len(text) > len(self.sent):
            piece, self.sent = text[len(self.sent) :], text
            return [piece]
        return []

    def _status(self, status: Any) -> list[str]:
        from a2a.types.a2a_pb2 import TaskState

        state = status.state
        said = _text(status.message.parts) if status.HasField("message") else ""
        if state == TaskState.TASK_STATE_COMPLETED:
            self.ended = True
        elif state in (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED):
            # Asking our user or staff in the remote's place is not built yet: its question
            # ends the answer, so the caller can ask the user itself.
            self.ended = True
            return self._add(f"\n\n{said}" if self.sent and said else said, replace=False)
        elif state in (
            TaskState.TASK_STATE_FAILED,
            TaskState.TASK_STATE_CANCELED,
            TaskState.TASK_STATE_REJECTED,
        ):
            self.ended = True
            self.failure = said or f"The remote agent's task ended {TaskState.Name(state)}."
        return []


def _text(parts: Any) -> str:
    return "".join(part.text for part in parts if part.HasField("text"))
