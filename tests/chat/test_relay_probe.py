"""A socket or SSE stream whose channel-layer groups are forgotten (as a Redis restart forgets
them) closes with 4503 / ends with `stream_interrupted`, instead of staying open and silent;
one whose groups are there stays open."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.test import AsyncClient

from chat.events import envelope, session_group
from chat.models import ChatSession
from tests.chat.helpers import connect
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def quick_probes(settings) -> None:
    settings.RELAY_PROBE_SECONDS = 0.05


async def test_a_socket_stays_open_while_its_probes_come_back(user, quick_probes):
    ws = await connect(user)
    assert await ws.receive_nothing(timeout=0.5)  # ten probes went out and came back
    await ws.send_json_to({"type": "session.join", "session_id": str(uuid.uuid4())})
    assert (await ws.receive_json_from(timeout=5))["data"]["code"] == "session_not_found"
    await ws.disconnect()


async def test_a_socket_whose_groups_are_forgotten_closes_with_4503(user, quick_probes, caplog):
    ws = await connect(user)
    await get_channel_layer().flush()  # every group and queue gone, as after a Redis restart
    closed = await ws.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4503}
    assert "closed (4503): channel layer failed: its groups are gone" in caplog.text


async def test_an_sse_stream_whose_groups_are_forgotten_ends_interrupted(user, quick_probes):
    session, body = await session_stream(user)
    await get_channel_layer().flush()
    rest = [chunk.decode() async for chunk in body]
    data = [
        json.loads(line[6:])
        for chunk in rest
        for line in chunk.splitlines()
        if line[:6] == "data: "
    ]
    assert [(e["type"], e["data"]["code"]) for e in data] == [("error", "stream_interrupted")]


async def test_an_sse_stream_read_slowly_is_not_taken_for_one_whose_groups_are_lost(
    user, quick_probes
):
    """An event is handed to the reader while a probe is out, and the reader then stops
    reading for many probe intervals: the probe's answer waits in the channel behind nothing,
    and the stream goes on when reading resumes."""
    session, body = await session_stream(user)
    await delta(session, "first")  # waiting in the channel before the first probe goes out
    assert "first" in (await anext(body)).decode()  # handed over with the probe still out
    await asyncio.sleep(0.5)  # the reader is busy for ten probe intervals
    await delta(session, "still here")
    chunk = (await anext(body)).decode()
    assert "still here" in chunk and "stream_interrupted" not in chunk


async def session_stream(user) -> tuple[ChatSession, AsyncIterator[bytes]]:
    """A new session of the user's and its SSE stream, read past its snapshot."""
    session = await ChatSession.objects.acreate(
        id=uuid.uuid4(), user=user, agent=await make_agent_async()
    )
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(f"/api/v1/sessions/{session.id}/events/")
    body = aiter(response.streaming_content)
    assert "session.snapshot" in (await anext(body)).decode()
    return session, body


async def delta(session: ChatSession, words: str) -> None:
    event = envelope("message.delta", session_id=session.id, data={"text": words})
    await get_channel_layer().group_send(
        session_group(session.id), {"type": "message.delta", "event": event}
    )


async def make_agent_async():
    return await database_sync_to_async(make_agent)("assistant", is_entry=True)
