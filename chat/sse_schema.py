"""Adds the Server-Sent Events endpoints (plain async views) to the OpenAPI schema."""

from __future__ import annotations

from typing import Any

_STREAM = {
    "200": {
        "description": "text/event-stream of protocol envelopes (docs/protocol.md): first a "
        "`session.snapshot`, then live events; `: keepalive` comments while idle. Reconnect "
        "(with or without Last-Event-ID) to get a fresh snapshot.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    },
    "401": {"description": "No or bad credentials."},
    "404": {"description": "No such object, or another user's."},
}


def _operation(operation_id: str, name: str, summary: str) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "tags": ["events"],
            "parameters": [
                {
                    "name": name,
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string", "format": "uuid"},
                },
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string"},
                },
            ],
            "security": [{"bearerAuth": []}, {"cookieAuth": []}],
            "responses": _STREAM,
        }
    }


def add_event_streams(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: document both event streams."""
    paths = result.setdefault("paths", {})
    paths["/api/v1/sessions/{session_id}/events/"] = _operation(
        "sessions_events", "session_id", "A session's events as Server-Sent Events."
    )
    paths["/api/v1/runs/{run_id}/events/"] = _operation(
        "runs_events", "run_id", "One turn's events as Server-Sent Events, until it ends."
    )
    return result
