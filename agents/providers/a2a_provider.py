"""A remote A2A agent as a model: its task's answer streamed as text, through the a2a-sdk client.

One delegation is one remote task. When the remote asks for input and the agent has a question
tool (`ask_user` or `ask_human`), its question becomes that tool's call, whose id carries the
remote task's id; the person's answer, the call's result, goes back on the same task.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents.providers.base import (
    ModelRequest,
    Note,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolCallRequest,
    Usage,
    secret_headers,
)

CANCEL_SECONDS = 5.0  # how long a stopped delegation waits for the remote to take its cancel
HOPS_KEY = "agent_platform_hops"  # message metadata: the agent platforms it came through
CALL_PREFIX = "a2a:"  # a question tool call's id: the prefix, then the remote task's ids
NOTE_MAX_CHARS = 200  # a status message shown on the expert's panel, at most
QUESTION_TOOLS = ("ask_user", "ask_human")  # the first the agent has asks the remote's questions


@dataclass(frozen=True)
class Send:
    """What goes to the remote: a new task's text, or a person's answer on a task it asked."""

    text: str
    task_id: str = ""
    context_id: str = ""
    unanswered: bool = False  # nobody answered its question: the remote task is cancelled
    hops: int = 1  # the agent platforms the message has come through, ours included


class A2AProvider:
    """Asks the remote agent whose card is at the agent's base URL, as one A2A task: the
    delegated task's text goes out as the message; the answer's chunks come back as text, its
    question for input as a question tool's call, its status messages as notes, its reported
    usage as usage. A stopped or
    timed-out delegation cancels the remote task."""

    name = "a2a"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield the remote answer's events as they stream; ProviderError on any failure."""
        if not request.base_url:
            message = "A remote A2A agent needs its base URL (where its agent card is served)."
            raise ProviderError("model_misconfigured", message)
        send = _to_send(request.messages)
        timeout = request.timeout or settings.A2A_TIMEOUT_SECONDS
        deadline = time.monotonic() + timeout
        loop = asyncio.new_event_loop()  # this thread's own: a run's thread runs no loop
        send = dataclasses.replace(send, hops=request.a2a_hops + 1)
        answer = _ask(request.base_url, _headers(request), send, _question_tool(request), timeout)
        try:
            while True:
                left = max(deadline - time.monotonic(), 0.001)
                try:
                    yield loop.run_until_complete(asyncio.wait_for(answer.__anext__(), left))
                except StopAsyncIteration:
                    return
                except TimeoutError:  # (the remote task was cancelled as the wait ended)
                    message = f"The remote agent did not finish within {timeout:g} seconds."
                    raise ProviderError("model_timeout", message) from None
        finally:  # also when the run stops reading (stopped, timed out): cancel the remote task
            loop.run_until_complete(answer.aclose())
            loop.run_until_complete(loop.shutdown_asyncgens())  # the client's own streams
            loop.close()


def _headers(request: ModelRequest) -> dict[str, str]:
    """The bearer token from the agent's key variable, if it names one, and its secret headers."""
    headers = {}
    if request.api_key_env:
        key = os.environ.get(variable := request.api_key_env, "")
        if not key:
            message = f"The environment variable {variable} (this agent's key) is not set."
            raise ProviderError("model_misconfigured", message)
        headers["Authorization"] = f"Bearer {key}"
    return {**headers, **secret_headers(request)}


def _question_tool(request: ModelRequest) -> str:
    """The question tool the remote's questions are asked with ("": none, they end the answer)."""
    names = {tool.get("function", {}).get("name") for tool in request.tools}
    return next((name for name in QUESTION_TOOLS if name in names), "")


def _to_send(messages: list[dict[str, Any]]) -> Send:
    """The delegated task (the last user message's text), or, when the last message answers a
    question the remote asked, that answer for the remote's task."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool" and str(last.get("tool_call_id", "")).startswith(CALL_PREFIX):
        ids: list[str] = str(last["tool_call_id"])[len(CALL_PREFIX) :].split(":")
        task_id, context_id = ids[0], ids[1] if len(ids) > 1 else ""
        answer = _answer(last.get("content"))
        return Send(answer, task_id, context_id, unanswered=not answer)
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return Send(message["content"])
    raise ProviderError("model_error", "There is no task to send to the remote agent.")


def _answer(content: Any) -> str:
    """A question tool's result as the text the remote gets: the person's answer ("" for
    anything else: declined, no answer in time, the user stopped waiting)."""
    try:
        result = json.loads(content or "")["result"]
        if result["status"] == "answered":
            return str(result["answer"]).strip()
    except (ValueError, TypeError, KeyError):
        pass
    return ""


def _call_id(task_id: str, context_id: str) -> str:
    """A new question call's id, naming the remote task (the context too, where it fits); its
    own last part tells apart the questions one task asks."""
    own = uuid.uuid4().hex[:8]
    both = f"{CALL_PREFIX}{task_id}:{context_id}:{own}"
    return both if len(both) <= 128 else f"{CALL_PREFIX}{task_id}::{own}"


async def _ask(
    base_url: str, headers: dict[str, str], send: Send, question_tool: str, timeout: float
) -> AsyncGenerator[ProviderEvent, None]:
    """One A2A exchange as provider events (failures as ProviderError)."""
    import httpx
    from a2a.client import (
        A2ACardResolver,
        A2AClientError,
        A2AClientTimeoutError,
        ClientConfig,
        ClientFactory,
    )
    from a2a.types.a2a_pb2 import CancelTaskRequest, Message, Part, Role, SendMessageRequest
    from a2a.utils.errors import A2AError

    reader = _Reader(question_tool, task_id=send.task_id)
    try:
        async with httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout, connect=10.0)
        ) as http:
            card = await A2ACardResolver(http, base_url).get_agent_card()
            config = ClientConfig(httpx_client=http, streaming=True)
            async with ClientFactory(config).create(card) as client:
                if send.unanswered:
                    with contextlib.suppress(Exception):
                        cancel = client.cancel_task(CancelTaskRequest(id=send.task_id))
                        await asyncio.wait_for(cancel, CANCEL_SECONDS)
                    message = "Nobody answered the remote agent's question; its task was cancelled."
                    raise ProviderError("model_error", message)
                sent = Message(
                    message_id=str(uuid.uuid4()),
                    role=Role.ROLE_USER,
                    parts=[Part(text=send.text)],
                    task_id=send.task_id,
                    context_id=send.context_id,
                )
                sent.metadata.update({HOPS_KEY: send.hops})
                try:
                    async for event in client.send_message(SendMessageRequest(message=sent)):
                        for piece in reader.read(event):
                            yield piece
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
    except A2AError as exc:  # the remote's own JSON-RPC error: it refused the request
        raise ProviderError("model_error", f"The remote agent refused the task: {exc}") from exc
    if reader.failure:
        raise ProviderError("model_error", reader.failure)
    if not reader.ended:
        raise ProviderError("model_error", "The remote agent's stream ended before its task did.")
    if reader.usage is not None:
        yield reader.usage


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
    return ProviderError("model_error", f"The remote agent's answer could not be read: {exc}")


class _Reader:
    """The answer out of A2A stream events: text from artifact chunks (a final chunk that
    replaces them adds only what was not sent), a direct reply or a whole task; a question for
    input as a question tool's call; the usage the remote reports; how the task ended."""

    def __init__(self, question_tool: str, *, task_id: str = "") -> None:
        self.question_tool = question_tool
        self.task_id = task_id
        self.context_id = ""
        self.sent = ""
        self.ended = False
        self.failure = ""
        self.usage: Usage | None = None

    def read(self, event: Any) -> list[ProviderEvent]:
        """The events this stream event brings."""
        kind = event.WhichOneof("payload")
        if kind == "message":
            self._note_usage(event.message)
            self.ended = True
            return self._add(_text(event.message.parts), replace=False)
        if kind == "task":
            self._note_task(event.task.id, event.task.context_id, event.task)
            whole = "".join(_text(a.parts) for a in event.task.artifacts)
            pieces = self._add(whole, replace=True)
            return pieces + self._status(event.task.status)
        if kind == "artifact_update":
            update = event.artifact_update
            self._note_task(update.task_id, update.context_id, update)
            return self._add(_text(update.artifact.parts), replace=not update.append)
        if kind == "status_update":
            update = event.status_update
            self._note_task(update.task_id, update.context_id, update)
            return self._status(update.status)
        return []

    def _note_task(self, task_id: str, context_id: str, carrier: Any) -> None:
        self.task_id = task_id or self.task_id
        self.context_id = context_id or self.context_id
        self._note_usage(carrier)

    def _note_usage(self, carrier: Any) -> None:
        """Usage the remote reports in an event's metadata (`usage`: OpenAI's or A2A peers'
        names for the tokens); the last report counts."""
        if not carrier.HasField("metadata") or "usage" not in carrier.metadata:
            return
        from google.protobuf.json_format import MessageToDict

        reported = MessageToDict(carrier.metadata).get("usage")
        if isinstance(reported, dict):
            self.usage = _usage(reported) or self.usage

    def _add(self, text: str, *, replace: bool) -> list[ProviderEvent]:
        if not replace or not self.sent:
            self.sent += text
            return [TextDelta(text)] if text else []
        if text.startswith(self.sent) and len(text) > len(self.sent):
            piece, self.sent = text[len(self.sent) :], text
            return [TextDelta(piece)]
        return []

    def _status(self, status: Any) -> list[ProviderEvent]:
        from a2a.types.a2a_pb2 import TaskState

        state = status.state
        said = _text(status.message.parts) if status.HasField("message") else ""
        if state == TaskState.TASK_STATE_COMPLETED:
            self.ended = True
        elif state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING):
            return [Note(said.strip()[:NOTE_MAX_CHARS])] if said.strip() else []
        elif state == TaskState.TASK_STATE_INPUT_REQUIRED:
            self.ended = True
            if self.question_tool and self.task_id:
                question = said.strip() or "The remote agent needs more information to go on."
                arguments = json.dumps({"question": question[:2000]}, ensure_ascii=False)
                call_id = _call_id(self.task_id, self.context_id)
                return [ToolCallRequest(call_id, self.question_tool, arguments)]
            # No one to ask (the agent has no question tool, or this is its last call): the
            # question ends the answer, so the caller can ask the user itself.
            return self._add(f"\n\n{said}" if self.sent and said else said, replace=False)
        elif state == TaskState.TASK_STATE_AUTH_REQUIRED:
            self.ended = True
            self.failure = "The remote agent asks for credentials this platform does not hold."
        elif state in (
            TaskState.TASK_STATE_FAILED,
            TaskState.TASK_STATE_CANCELED,
            TaskState.TASK_STATE_REJECTED,
        ):
            self.ended = True
            self.failure = said or f"The remote agent's task ended {TaskState.Name(state)}."
        return []


def _usage(reported: dict[str, Any]) -> Usage | None:
    """Tokens from a usage report: prompt/completion (OpenAI) or input/output token names."""

    def count(*names: str) -> int:
        for name in names:
            value = reported.get(name)
            if isinstance(value, (int, float)) and value >= 0:
                return int(value)
        return 0

    usage = Usage(
        prompt_tokens=count("prompt_tokens", "input_tokens", "promptTokenCount"),
        completion_tokens=count("completion_tokens", "output_tokens", "candidatesTokenCount"),
        cached_tokens=count("cached_tokens", "cachedContentTokenCount"),
    )
    return usage if usage.total_tokens else None


def _text(parts: Any) -> str:
    return "".join(part.text for part in parts if part.HasField("text"))
