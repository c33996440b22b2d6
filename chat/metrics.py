"""The chat doors' metrics: websocket and SSE connections this process holds open."""

from __future__ import annotations

from config.metrics import gauge

CONNECTIONS = gauge(
    "live_connections",
    "Websockets and event streams (SSE, and the A2A and OpenAI doors' streams) this process "
    "holds open, by door.",
    ["door"],
)
