"""OpenTelemetry traces: set up once per process when OTEL_EXPORTER_OTLP_ENDPOINT is set (the
official SDK's OTLP exporter, http/protobuf, reading the standard OTEL_* variables), with
Django, Celery, psycopg and Redis instrumented; the tracer the apps record GenAI spans with;
and finished spans written with ids chosen in advance (docs/operations.md, *Traces*).

A turn is one trace whose id is its root run's id, and each run's span id comes from its own
id: any process, at any time, knows where a run's spans belong without carrying a context
(`run_span_context`). A run's own `invoke_agent` span outlives the processes that worked on
it, so it is written when the run ends (`span_write`) with the times the run recorded.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, TraceFlags

logger = logging.getLogger(__name__)

TRACER_NAME = "agent_platform"
# The run whose work runs now, in the OpenTelemetry context (a value, never propagated).
RUN_ID_KEY = otel_context.create_key("agent_platform.run.id")
_SPAN_ID_MASK = (1 << 64) - 1


class _Setup:
    """What this process set up: its span processor (None while traces are off)."""

    lock = threading.Lock()
    processor: Any = None
    resource: Any = None
    done = False


def telemetry_setup(service: str) -> bool:
    """Export traces from this process (named `service` unless OTEL_SERVICE_NAME says) when
    an OTLP endpoint is configured; instrument Django, Celery, psycopg and Redis. Once per
    process; whether traces are on."""
    with _Setup.lock:
        if _Setup.done:
            return _Setup.processor is not None
        _Setup.done = True
        if not settings.OTEL_EXPORTER_OTLP_ENDPOINT:
            return False
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        # The exporter reads OTEL_EXPORTER_OTLP_* itself; Django's settings may carry the
        # endpoint from a .env file the environment lacks.
        os.environ.setdefault("OTEL_EXPORTER_OTLP_ENDPOINT", settings.OTEL_EXPORTER_OTLP_ENDPOINT)
        _Setup.resource = Resource.create(
            {"service.name": os.environ.get("OTEL_SERVICE_NAME") or service}
        )
        provider = TracerProvider(resource=_Setup.resource)
        _Setup.processor = BatchSpanProcessor(OTLPSpanExporter())
        provider.add_span_processor(_Setup.processor)
        trace.set_tracer_provider(provider)
        _instrument()
        return True


def _instrument() -> None:
    """The official instrumentations of what every process uses."""
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    DjangoInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    PsycopgInstrumentor().instrument(skip_dep_check=True)
    RedisInstrumentor().instrument()


def telemetry_flush(timeout_millis: int = 5000) -> None:
    """Send what is buffered now (a worker about to exit, a test reading the collector)."""
    if _Setup.processor is not None:
        _Setup.processor.force_flush(timeout_millis)


def tracing() -> bool:
    """Whether this process exports traces."""
    return _Setup.processor is not None


def capture_content() -> bool:
    """Whether spans may carry message and tool text (OTEL_GENAI_CAPTURE_CONTENT): off unless
    an operator opts in, because answers hold what people wrote."""
    return settings.OTEL_GENAI_CAPTURE_CONTENT


def tracer() -> trace.Tracer:
    """The platform's tracer (a no-op one while traces are off)."""
    return trace.get_tracer(TRACER_NAME)


def trace_id_of(root_id: uuid.UUID) -> int:
    """A turn's trace id: its root run's id."""
    return root_id.int


def span_id_of(run_id: uuid.UUID) -> int:
    """A run's span id: the low 64 bits of its id (random in a uuid4; never all zero)."""
    return (run_id.int & _SPAN_ID_MASK) or 1


def run_span_context(root_id: uuid.UUID, run_id: uuid.UUID) -> SpanContext:
    """Where a run's spans belong: its turn's trace, under its own span."""
    return SpanContext(
        trace_id=trace_id_of(root_id),
        span_id=span_id_of(run_id),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def trace_url(root_id: uuid.UUID, run_id: uuid.UUID) -> str:
    """Where an operator's trace viewer shows a run's turn (OTEL_TRACE_URL_TEMPLATE with
    {trace_id} and {span_id}); "" when no viewer is configured."""
    template = settings.OTEL_TRACE_URL_TEMPLATE
    if not template:
        return ""
    return template.format(
        trace_id=format(trace_id_of(root_id), "032x"), span_id=format(span_id_of(run_id), "016x")
    )


def run_parent(root_id: uuid.UUID, run_id: uuid.UUID) -> Any:
    """An OpenTelemetry context whose current span is the run's: spans started in it are the
    run's children, and log lines written in it carry its ids (config/logs.py)."""
    context = trace.set_span_in_context(NonRecordingSpan(run_span_context(root_id, run_id)))
    return otel_context.set_value(RUN_ID_KEY, str(run_id), context)


def current_run_id() -> str:
    """The id of the run whose work runs now (run_parent's context), or ''."""
    return str(otel_context.get_value(RUN_ID_KEY) or "")


def span_write(
    *,
    name: str,
    context: SpanContext,
    parent: SpanContext | None,
    start_ns: int,
    end_ns: int,
    attributes: Mapping[str, Any],
    events: Sequence[tuple[str, int, Mapping[str, Any]]] = (),
    error: str = "",
    kind: SpanKind = SpanKind.INTERNAL,
) -> None:
    """Export a finished span whose ids and times were chosen before (a run's, written when it
    ends): `events` are (name, time in ns, attributes); `error` sets an error status."""
    if _Setup.processor is None:
        return
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import StatusCode

    span = ReadableSpan(
        name=name,
        context=SpanContext(
            context.trace_id, context.span_id, is_remote=False, trace_flags=context.trace_flags
        ),
        parent=parent,
        resource=_Setup.resource,
        attributes={k: v for k, v in attributes.items() if v is not None},
        events=[Event(n, attributes=dict(a), timestamp=t) for n, t, a in events],
        kind=kind,
        status=Status(StatusCode.ERROR, error) if error else Status(StatusCode.UNSET),
        start_time=start_ns,
        end_time=end_ns,
        instrumentation_scope=InstrumentationScope(TRACER_NAME),
    )
    _Setup.processor.on_end(span)
