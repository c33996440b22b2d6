"""The one place events are emitted: the protocol envelope, sent to a group after commit."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

# Every event type the server emits; docs/protocol.md documents each, tests check both agree.
EVENT_TYPES = frozenset(
    {
        "session.snapshot",
        "message.created",
        "message.started",
        "message.delta",
        "message.completed",
        "tool.called",
        "tool.result",
        "delegation.started",
        "delegation.completed",
        "run.completed",
        "reminder.due",
        "error",
    }
)


def session_group(session_id: uuid.UUID | str) -> str:
    """The channel-layer group of one chat session."""
    return f"chat.session.{session_id}"


def envelope(
    type: str,
    *,
    session_id: uuid.UUID | str | None,
    run_id: uuid.UUID | str | None = None,
    message_id: uuid.UUID | str | None = None,
    agent: dict[str, Any] | None = None,
    seq: int | None = None,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build one event in the protocol's envelope shape."""
    if type not in EVENT_TYPES:
        raise ValueError(f"undocumented event type {type!r}")
    return {
        "type": type,
        "session_id": str(session_id) if session_id else None,
        "run_id": str(run_id) if run_id else None,
        "message_id": str(message_id) if message_id else None,
        "agent": agent,
        "seq": seq,
        "data": data or {},
    }


def emit(event: dict[str, Any]) -> None:
    """Send the event to its session's group once the current transaction commits."""
    transaction.on_commit(lambda: _send(session_group(event["session_id"]), event))


def _send(group: str, event: dict[str, Any]) -> None:
    # The database is the truth and clients converge from it, so a lost event is logged, not fatal.
    try:
        async_to_sync(get_channel_layer().group_send)(
            group, {"type": event["type"], "event": event}
        )
    except Exception:
        logger.warning("could not send %s to %s", event["type"], group, exc_info=True)
