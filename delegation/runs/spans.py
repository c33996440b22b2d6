"""What a run tells operators: its `invoke_agent` span (OpenTelemetry's GenAI conventions),
written once it ends, nested as the delegation tree; the context its work runs in, so the
model and tool spans below it (and log lines) belong to it; and its count when it ends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.utils import timezone
from opentelemetry import context as otel_context

from config.telemetry import (
    capture_content,
    run_parent,
    run_span_context,
    span_write,
    tracing,
)
from delegation.metrics import BUDGET_REFUSALS, QUEUE_WAIT, RUNS_ENDED
from delegation.models import Run
from delegation.runs.hooks import HOOKS

RUN_ID = "agent_platform.run.id"  # on every span of the platform's own


@contextmanager
def run_traced(run: Run) -> Iterator[None]:
    """Work done inside belongs to the run: spans started here are its children, and log lines
    carry its trace (docs/operations.md)."""
    token = otel_context.attach(run_parent(run.root_id_or_self, run.id))
    try:
        yield
    finally:
        otel_context.detach(token)


def queue_wait_observe(run: Run) -> None:
    """A hop's cost: how long the run, now claimed, waited queued for a worker."""
    since = run.queued_at or run.created_at
    waited = (timezone.now() - since).total_seconds()
    QUEUE_WAIT.labels(kind="sub" if run.parent_id else "entry").observe(max(waited, 0.0))


def run_ended_observed(run: Run) -> None:
    """After the commit that ended the run: count it, and write its span."""
    kind = "sub" if run.parent_id else "entry"
    agent = run.agent_config.get("name", "")
    RUNS_ENDED.labels(agent=agent, kind=kind, status=run.status).inc()
    if (run.error or {}).get("code") == "budget_exceeded":
        BUDGET_REFUSALS.labels(kind="money").inc()
    if tracing():
        _span_write(run)


def _span_write(run: Run) -> None:
    config = run.agent_config
    root_id = run.root_id_or_self
    usage = run.usage or {}
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": config.get("name", ""),
        "gen_ai.agent.id": str(run.agent_id),
        "gen_ai.conversation.id": str(run.session_id),
        "gen_ai.provider.name": config.get("provider", ""),
        "gen_ai.request.model": config.get("model") or None,
        "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
        "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
        RUN_ID: str(run.id),
        "agent_platform.run.status": run.status,
        "agent_platform.run.depth": run.depth,
        "agent_platform.run.path": "/".join(run.path or []),
        "agent_platform.cost": usage.get("cost"),
        "agent_platform.currency": usage.get("currency"),
        "error.type": (run.error or {}).get("code"),
    }
    attributes |= _routing_attributes(run.routing)
    if capture_content():
        attributes["gen_ai.input.messages"] = _messages("user", run.task)
        attributes["gen_ai.output.messages"] = _messages("assistant", run.answer)
    events = [event for source in HOOKS.span_events for event in source(run)]
    span_write(
        name=f"invoke_agent {config.get('name', '')}",
        context=run_span_context(root_id, run.id),
        parent=run_span_context(root_id, run.parent_id) if run.parent_id else None,
        start_ns=ns_of(run.created_at),
        end_ns=ns_of(run.finished_at or run.created_at),
        attributes=attributes,
        events=events,
        error=(run.error or {}).get("message", "") if run.status != "succeeded" else "",
    )


def _routing_attributes(routing: dict[str, Any] | None) -> dict[str, Any]:
    """A turn's routing as its root span shows it: the intent, the expert asked first, and
    with learning the figures the decision used (JSON: a span attribute is flat)."""
    if not routing:
        return {}
    shown = {
        "agent_platform.routing.intent": routing.get("intent"),
        "agent_platform.routing.target": routing.get("target"),
    }
    learning = routing.get("learning")
    if learning:
        shown["agent_platform.routing.learning"] = learning.get("mode")
        shown["agent_platform.routing.figures"] = json.dumps(learning.get("figures", []))
        shown["agent_platform.routing.learning_changed"] = learning.get("changed") or None
    return shown


def _messages(role: str, text: str) -> str:
    """One message in the GenAI conventions' shape, as JSON (a span attribute is flat)."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def ns_of(moment: datetime) -> int:
    """A moment as OpenTelemetry's nanoseconds since the epoch."""
    return int(moment.timestamp() * 1_000_000_000)
