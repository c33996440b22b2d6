"""The one streaming interface every model provider implements, and its event and error types."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from config.errors import ERROR_CODES


@dataclass(frozen=True)
class ModelRequest:
    """One chat completion request: OpenAI-format messages and tool schemas."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    temperature: float | None = None
    max_tokens: int | None = None
    base_url: str = ""
    api_key_env: str = ""  # the environment variable holding this agent's key, if any
    # Extra headers: each name mapped to the environment variable holding its value.
    secret_headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None  # seconds the whole call may take; None: the provider's own
    a2a_hops: int = 0  # agent platforms the turn's message came through (A2A_MAX_HOPS)


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer text."""

    text: str


@dataclass(frozen=True)
class ToolCallRequest:
    """A complete tool call the model asked for; `arguments` is the raw JSON text it wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    """Tokens used by the call; `cached_tokens` (part of the prompt) where the server says."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Note:
    """A line on how the work goes that is not part of the answer (a remote agent's status
    message, "Searching the catalogue…"): shown live, never saved."""

    text: str


ProviderEvent = TextDelta | ToolCallRequest | Usage | Note


class ProviderError(Exception):
    """A model call that failed; `code` is one of the protocol's model_* error codes."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"undocumented error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message


class ModelProvider(Protocol):
    """Streams one completion: text deltas as they come, then tool calls, then usage."""

    name: str

    def stream(self, request: ModelRequest) -> Iterator[ProviderEvent]:
        """Yield events for one call; raise ProviderError on failure."""
        ...


def whole_answer(provider: ModelProvider, request: ModelRequest) -> tuple[str, Usage]:
    """One call's whole text and the usage it reported (for calls nobody watches stream: the
    router, the validator)."""
    text, usage = "", Usage()
    for event in provider.stream(request):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, Usage):
            usage = event
    return text, usage


def secret_headers(request: ModelRequest) -> dict[str, str]:
    """The request's extra headers with their values from the environment; a variable that is
    not set is a misconfigured agent."""
    headers = {}
    for name, variable in request.secret_headers.items():
        value = os.environ.get(variable, "")
        if not value:
            message = f"The environment variable {variable} (header {name}) is not set."
            raise ProviderError("model_misconfigured", message)
        headers[name] = value
    return headers
