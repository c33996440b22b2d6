"""Log lines of a turn's work carry its ids: `run_id`, `trace_id` and `span_id`, read from the
OpenTelemetry context the run's work runs in (delegation.runs.spans.run_traced), so a JSON log
line (LOG_FORMAT=json) and the turn's trace find each other."""

from __future__ import annotations

import logging

from opentelemetry import trace

from config.telemetry import current_run_id


class TraceFilter(logging.Filter):
    """Adds the current run's and span's ids to a record (empty outside a run's work)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Annotate; never drops a record."""
        context = trace.get_current_span().get_span_context()
        record.trace_id = format(context.trace_id, "032x") if context.is_valid else ""
        record.span_id = format(context.span_id, "016x") if context.is_valid else ""
        record.run_id = current_run_id()
        return True
