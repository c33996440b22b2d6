"""The OpenAI-compatible provider: the official SDK's streaming Chat Completions with tools."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import openai
from django.conf import settings

from agents.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolCallRequest,
    Usage,
)


@functools.lru_cache(maxsize=16)
def _client(base_url: str, api_key: str, timeout: float, max_retries: int) -> openai.OpenAI:
    # The SDK retries 408/409/429/5xx and connection errors with exponential backoff.
    return openai.OpenAI(
        base_url=base_url or None, api_key=api_key, timeout=timeout, max_retries=max_retries
    )


class OpenAIProvider:
    """Any OpenAI-compatible server (OpenAI, vLLM, Ollama, LiteLLM) through the official SDK."""

    name = "openai"

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Stream one completion, assembling tool-call arguments split across chunks."""
        base_url = request.base_url or settings.OPENAI_BASE_URL
        api_key = _api_key(request, base_url)
        client = _client(base_url, api_key, settings.OPENAI_TIMEOUT, settings.OPENAI_MAX_RETRIES)
        try:
            yield from self._stream(client, request)
        except openai.APITimeoutError as exc:
            raise ProviderError("model_timeout", _timeout_message()) from exc
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

    def _stream(self, client: openai.OpenAI, request: ModelRequest) -> Iterator[ProviderEvent]:
        deadline = time.monotonic() + settings.OPENAI_TIMEOUT
        stream = client.chat.completions.create(**_arguments(request))
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        finished = False  # a stream cut short must not pass for a whole answer
        with stream:
            for chunk in stream:
                if time.monotonic() > deadline:
                    raise ProviderError("model_timeout", _timeout_message())
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices:
                    finished = finished or choice.finish_reason is not None
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        yield TextDelta(delta.content)
                    for part in delta.tool_calls or []:
                        _merge_tool_call_part(calls, part)
        if not finished:
            raise ProviderError("model_error", "The model service cut its answer short.")
        for index in sorted(calls):
            call = calls[index]
            yield ToolCallRequest(
                call["id"] or f"call_{index}", call["name"], "".join(call["arguments"])
            )
        yield usage


def _usage(reported: Any) -> Usage:
    """Tokens as the server reported them, with cached prompt tokens where it says."""
    details = getattr(reported, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(reported.prompt_tokens or 0, reported.completion_tokens or 0, cached)


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


def _arguments(request: ModelRequest) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "model": request.model or settings.OPENAI_MODEL,
        "messages": request.messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        arguments["tools"] = request.tools
    if request.temperature is not None:
        arguments["temperature"] = request.temperature
    if request.max_tokens:
        arguments["max_tokens"] = request.max_tokens
    return arguments


def _merge_tool_call_part(calls: dict[int, dict[str, Any]], part: Any) -> None:
    """Tool calls arrive as parts keyed by index: id and name once, arguments in pieces."""
    index = part.index if part.index is not None else len(calls)
    call = calls.setdefault(index, {"id": "", "name": "", "arguments": []})
    if part.id:
        call["id"] = part.id
    function = part.function
    if function is not None:
        if function.name:
            call["name"] = call["name"] or function.name
        if function.arguments:
            call["arguments"].append(function.arguments)


def _timeout_message() -> str:
    return f"The model did not answer within {settings.OPENAI_TIMEOUT:g} seconds."


def _brief(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return text[:300]
