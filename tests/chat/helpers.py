"""Websocket test helpers: connect as a user, send frames, collect events."""

from __future__ import annotations

import uuid
from typing import Any

from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from chat.routing import websocket_urlpatterns


async def connect(user: Any) -> WebsocketCommunicator:
    """A connected communicator whose scope carries `user` (as AuthMiddlewareStack would)."""
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/chat/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


def send_frame(
    text: str = "hello",
    *,
    session_id: uuid.UUID | str | None = None,
    message_id: uuid.UUID | str | None = None,
) -> dict[str, Any]:
    """A message.send frame with fresh ids unless given."""
    return {
        "type": "message.send",
        "session_id": str(session_id or uuid.uuid4()),
        "message_id": str(message_id or uuid.uuid4()),
        "text": text,
    }


async def events_until(
    communicator: WebsocketCommunicator,
    last_type: str = "run.completed",
    timeout: float = 10,
    *,
    depth: int | None = None,
) -> list[dict[str, Any]]:
    """Every event received up to and including the first of `last_type` (of an agent at
    `depth`, if given)."""
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=timeout)
        events.append(event)
        if event["type"] == last_type and (
            depth is None or (event["agent"] or {}).get("depth") == depth
        ):
            return events
