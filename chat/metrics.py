"""The chat doors' metrics: websocket and SSE connections this process holds open."""

from __future__ import annotations

from config.metrics import gauge

CONNECTIONS = gauge(
    "live_connections",
    "Websockets and SSE streams this process holds open, by door.",
    ["door"],
)
