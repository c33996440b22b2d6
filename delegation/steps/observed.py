"""A step's spans (OpenTelemetry's GenAI conventions) and latencies: `chat <model>` for each
model call, with its tokens, finish reason and cost; `execute_tool <tool>` for each tool call.
Message and tool text only when OTEL_GENAI_CAPTURE_CONTENT is on."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from agents.providers.base import ModelRequest, ToolCallRequest
from agents.registry import Tool, ToolResult
from config.telemetry import capture_content, tracer
from delegation.metrics import BUDGET_REFUSALS, MODEL_CALL, MODEL_CALL_FAILURES
from delegation.models import Run
from delegation.runs.spans import RUN_ID
from delegation.runs.writes import RunStopped


class ModelCallSpan:
    """One model call's span and clock: started before the request, its stream's end noted,
    closed when the call is charged (its tokens and cost known then)."""

    def __init__(self, run: Run, request: ModelRequest, provider: str) -> None:
        # The model the ledger records: the offline model is "offline", whatever is configured.
        self.provider = provider
        self.model = "offline" if provider == "offline" else request.model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": self.model,
            "gen_ai.agent.name": run.agent_config.get("name", ""),
            RUN_ID: str(run.id),
        }
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if request.max_tokens:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        if capture_content():
            attributes["gen_ai.input.messages"] = json.dumps(request.messages, default=str)
        self.span: Span = tracer().start_span(
            f"chat {self.model}", kind=SpanKind.CLIENT, attributes=attributes
        )
        self.started = time.monotonic()
        self.streamed_ns: int | None = None

    @contextmanager
    def streaming(self) -> Iterator[None]:
        """While the model streams: the span is current (an HTTP or database span below it is
        its child); a failure ends it with the error's code."""
        try:
            with trace.use_span(self.span, end_on_exit=False, record_exception=False):
                yield
        except RunStopped:  # stopped or taken over: not the model's failure
            self.span.set_attribute("agent_platform.run.stopped", True)
            self.span.end()
            raise
        except Exception as exc:
            self.failed(getattr(exc, "code", type(exc).__name__))
            raise
        self.streamed_ns = time.time_ns()
        MODEL_CALL.labels(provider=self.provider, model=self.model).observe(
            time.monotonic() - self.started
        )

    def failed(self, code: str) -> None:
        """The call failed: counted, and its span ends with `error.type`."""
        MODEL_CALL_FAILURES.labels(provider=self.provider, code=code).inc()
        self.span.set_attribute("error.type", code)
        self.span.set_status(StatusCode.ERROR, code)
        self.span.end()

    def charged(
        self,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        cost: Any,
        currency: str,
        text: str,
        calls: Sequence[ToolCallRequest],
    ) -> None:
        """The call was charged: its usage, finish reason and cost, and the span's end (at
        the stream's end, not the commit's)."""
        span = self.span
        if not span.is_recording():  # traces off, or charged again after a failed commit
            return
        span.set_attribute("gen_ai.usage.input_tokens", prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", completion_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", ["tool_calls" if calls else "stop"])
        span.set_attribute("agent_platform.cost", str(cost))
        span.set_attribute("agent_platform.currency", currency)
        if capture_content():
            parts: list[dict[str, str]] = [{"type": "text", "content": text}]
            parts += [
                {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
                for c in calls
            ]
            output = [{"role": "assistant", "parts": parts}]
            span.set_attribute("gen_ai.output.messages", json.dumps(output))
        span.end(end_time=self.streamed_ns)


@contextmanager
def tool_span(run: Run, call: dict[str, Any], registered: Tool | None) -> Iterator[Span]:
    """The span of one tool call (`execute_tool <name>`), current while the tool runs; the
    caller reports its result with `tool_span_result`."""
    name = call["function"]["name"]
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call["id"],
        "gen_ai.tool.type": "extension" if registered and registered.outside else "function",
        "gen_ai.agent.name": run.agent_config.get("name", ""),
        RUN_ID: str(run.id),
    }
    if capture_content():
        attributes["gen_ai.tool.call.arguments"] = call["function"]["arguments"]
    with tracer().start_as_current_span(
        f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes
    ) as span:
        yield span


def tool_span_result(span: Span, result: ToolResult, content: str) -> None:
    """A tool call's outcome on its span; a refusal for want of budget is counted."""
    if result.error_code == "tool_budget":
        BUDGET_REFUSALS.labels(kind="tool_calls").inc()
    if not result.ok:
        span.set_attribute("error.type", result.error_code or "tool_error")
        span.set_status(StatusCode.ERROR, result.error_code or "tool_error")
    if capture_content():
        span.set_attribute("gen_ai.tool.call.result", content)
