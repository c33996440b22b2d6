"""The OpenAI-compatible provider: the official SDK's streaming Chat Completions with tools."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolCallRequest,
    Usage,
    secret_headers,
)

if TYPE_CHECKING:
    import openai

# Imported where used: the SDK costs about 0.9 s to import, paid by every process start (the
# server, each worker, each command) though many never call a model (agents/apps.py warms it).


@functools.lru_cache(maxsize=16)
def _client(
    base_url: str,
    api_key: str,
    timeout: float,
    max_retries: int,
    headers: tuple[tuple[str, str], ...] = (),
) -> openai.OpenAI:
    import openai

    # The SDK retries 408/409/429/5xx and connection errors with exponential backoff.
    return openai.OpenAI(
        base_url=base_url or None,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        default_headers=dict(headers) or None,
    )


class OpenAIProvider:
    """Any OpenAI-compatible server (OpenAI, vLLM, Ollama, LiteLLM) through the official SDK."""

    name = "openai"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream one completion, assembling tool-call arguments split across chunks."""
        import openai

        base_url = request.base_url or settings.OPENAI_BASE_URL
        api_key = _api_key(request, base_url)
        timeout = request.timeout or settings.OPENAI_TIMEOUT
        headers = tuple(sorted(secret_headers(request).items()))
        client = _client(base_url, api_key, timeout, settings.OPENAI_MAX_RETRIES, headers)
        try:
            yield from self._stream(client, request, timeout)
        except openai.APITimeoutError as exc:
            raise ProviderError("model_timeout", _timeout_message(timeout)) from exc
        except openai.RateLimitError as exc:
            raise ProviderError(
                "model_rate_limited", "The model service is rate limiting us."
            ) from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise ProviderError("model_auth", "The model service refused our credentials.") from exc
        except openai.APIConnectionError as exc:
            raise ProviderError(
                "model_unavailable", "The model service cannot be reached."
            ) from exc
        except openai.APIStatusError as exc:
            code = "model_unavailable" if exc.status_code >= 500 else "model_error"
            raise ProviderError(
                code, f"The model service answered {exc.status_code}: {_brief(exc)}"
            ) from exc
        except openai.APIError as exc:
            raise ProviderError(
                "model_error", f"The model service sent a bad answer: {_brief(exc)}"
            ) from exc
        except json.JSONDecodeError as exc:  # the SDK lets a non-JSON stream chunk escape as is
            message = "The model service sent a stream chunk that is not JSON."
            raise ProviderError("model_error", message) from exc

    def _stream(
        self, client: openai.OpenAI, request: ModelRequest, timeout: float
    ) -> Iterator[ProviderEvent]:
        deadline = time.monotonic() + timeout
        # The SDK sends the request (auth, retries, status errors); the stream's chunks are read
        # as plain JSON: building an SDK object per chunk cost ten times more than the relay.
        response = client.chat.completions.with_streaming_response.create(**_arguments(request))
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        finished = False  # a stream cut short must not pass for a whole answer
        with response as stream:
            for chunk in stream_chunks(_read_lines(stream)):
                if time.monotonic() > deadline:
                    raise ProviderError("model_timeout", _timeout_message(timeout))
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"])
                for choice in chunk.get("choices") or ():
                    finished = finished or choice.get("finish_reason") is not None
                    delta = choice.get("delta")
                    if not delta:
                        continue
                    if delta.get("content"):
                        yield TextDelta(delta["content"])
                    for part in delta.get("tool_calls") or ():
                        _merge_tool_call_part(calls, part)
        if not finished:
            raise ProviderError("model_error", "The model service cut its answer short.")
        for index in sorted(calls):
            call = calls[index]
            yield ToolCallRequest(
                call["id"] or f"call_{index}", call["name"], "".join(call["arguments"])
            )
        yield usage


def _read_lines(stream: Any) -> Iterator[str]:
    """The body's lines, split on LF (and CRLF) only, as server-sent events are: never on
    U+2028 and the like, which JSON strings may carry unescaped. The HTTP library's read errors
    become the SDK's, as its own stream reader maps them (a stall past the timeout is
    APITimeoutError)."""
    import openai

    timeouts, failures = _transport_errors()
    pending = b""
    try:
        for data in stream.iter_bytes():
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.removesuffix(b"\r").decode("utf-8")
        if pending:
            yield pending.removesuffix(b"\r").decode("utf-8")
    except timeouts as exc:
        raise openai.APITimeoutError(request=stream.http_response.request) from exc
    except failures as exc:
        raise openai.APIConnectionError(request=stream.http_response.request) from exc


@functools.cache
def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The timeout and request errors of the HTTP library the SDK runs on."""
    try:  # the SDK's own mapping (it moved from httpx to httpx2)
        from openai._httpx2 import request_exceptions, timeout_exceptions

        return tuple(timeout_exceptions()), tuple(request_exceptions())
    except ImportError:  # older SDKs: httpx
        import httpx

        return (httpx.TimeoutException,), (httpx.TransportError,)


def stream_chunks(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON chunks of a server-sent event stream, until `[DONE]` (a chunk that is not JSON
    raises JSONDecodeError; an `error` chunk, as some servers send mid-stream, raises)."""
    for data in _event_data(lines):
        if data == "[DONE]":
            return
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise json.JSONDecodeError("a stream chunk is not an object", data, 0)
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise ProviderError("model_error", f"The model service sent an error: {message}"[:300])
        yield chunk


def _event_data(lines: Iterator[str]) -> Iterator[str]:
    """Each event's data: its `data:` lines joined with newlines, the event ending at a blank
    line (comments, `event:`, `id:` and `retry:` fields are skipped)."""
    parts: list[str] = []
    for line in lines:
        if not line:
            if parts:
                yield "\n".join(parts)
                parts = []
        elif line.startswith("data:"):
            value = line[5:]
            parts.append(value[1:] if value.startswith(" ") else value)
    if parts:
        yield "\n".join(parts)


def _usage(reported: dict[str, Any]) -> Usage:
    """Tokens as the server reported them, with cached prompt tokens where it says."""
    details = reported.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    return Usage(reported.get("prompt_tokens") or 0, reported.get("completion_tokens") or 0, cached)


def _api_key(request: ModelRequest, base_url: str) -> str:
    """The agent's own key variable if it names one, else OPENAI_API_KEY; servers like Ollama
    need none, so a base URL alone is enough."""
    if request.api_key_env:
        key = os.environ.get(request.api_key_env, "")
        if not key:
            raise ProviderError(
                "model_misconfigured",
                f"The agent's key variable {request.api_key_env} is not set on the server.",
            )
        return key
    key = settings.OPENAI_API_KEY or ("not-needed" if base_url else "")
    if not key:
        raise ProviderError(
            "model_misconfigured", "OPENAI_API_KEY is not set and no OPENAI_BASE_URL is given."
        )
    return key


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The Chat Completions request the model service receives for `request`."""
    body: dict[str, Any] = {
        "model": request.model or settings.OPENAI_MODEL,
        "messages": request.messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = request.tools
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens:
        body["max_tokens"] = request.max_tokens
    return body


def _arguments(request: ModelRequest) -> dict[str, Any]:
    """`create()`'s arguments for the body, its messages and tools passed in `extra_body`, which
    the SDK sends as they are. Given as arguments, the SDK walks every nested value of them
    against its typed parameters (`maybe_transform`) to apply aliases and formats, which chat
    requests have none of: about 1 ms a call for a small team's prompt and tools, half the
    SDK's own cost of a call. `messages` is given empty for the SDK's check of required
    arguments; `extra_body` replaces it (tests/agents/test_openai_provider.py holds both: the
    body sent is the same, and the walk changes nothing)."""
    body = request_body(request)
    sent_as_is = {key: body.pop(key) for key in ("messages", "tools") if key in body}
    return {**body, "messages": [], "extra_body": sent_as_is}


def _merge_tool_call_part(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> None:
    """Tool calls arrive as parts keyed by index: id and name once, arguments in pieces."""
    index = part["index"] if part.get("index") is not None else len(calls)
    call = calls.setdefault(index, {"id": "", "name": "", "arguments": []})
    if part.get("id"):
        call["id"] = part["id"]
    function = part.get("function")
    if function:
        if function.get("name"):
            call["name"] = call["name"] or function["name"]
        if function.get("arguments"):
            call["arguments"].append(function["arguments"])


def _timeout_message(timeout: float) -> str:
    return f"The model did not answer within {timeout:g} seconds."


def _brief(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return text[:300]
