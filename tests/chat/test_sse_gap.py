"""SSE streams join the session group before reading the snapshot, so an event emitted while the
snapshot is being read reaches the stream (and a run stream still ends on its run.completed)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from chat import sse
from chat.events import emit, envelope, flush_events
from chat.models import ChatSession
from delegation.runs.create import run_create
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)

KEEPALIVE = ": keepalive"


@pytest.fixture
def emit_during_snapshot(monkeypatch):
    """Make reading the snapshot emit `event` (as a worker might at that moment)."""
    emitted: list[dict] = []

    def arm(event: dict) -> None:
        real = sse.session_snapshot_turns

        def snapshot_then_emit(**kwargs):
            snapshot = real(**kwargs)
            emit(event)
            flush_events()
            emitted.append(event)
            return snapshot

        monkeypatch.setattr(sse, "session_snapshot_turns", snapshot_then_emit)

    arm.emitted = emitted
    return arm


async def chunks_until_keepalive(body: AsyncIterator[bytes]) -> list[str]:
    """The stream's chunks up to its first keepalive (or its end)."""
    seen = []
    async for chunk in body:
        text = chunk.decode()
        seen.append(text)
        if text.startswith(KEEPALIVE):
            break
    return seen


def events(chunks: list[str]) -> list[dict]:
    return [
        json.loads(line[6:])
        for chunk in chunks
        for line in chunk.splitlines()
        if line.startswith("data: ")
    ]


@pytest.fixture
def session(user):
    return ChatSession.objects.create(
        id=uuid.uuid4(), user=user, agent=make_agent("assistant", is_entry=True)
    )


async def test_an_event_emitted_while_the_snapshot_is_read_reaches_the_session_stream(
    user, session, settings, emit_during_snapshot
):
    settings.SSE_KEEPALIVE_SECONDS = 0.2
    delta = envelope("message.delta", session_id=session.id, data={"text": "in the gap"})
    emit_during_snapshot(delta)
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(f"/api/v1/sessions/{session.id}/events/")
    assert response.status_code == 200
    chunks = await chunks_until_keepalive(response.streaming_content)
    assert emit_during_snapshot.emitted == [delta]
    assert [e["type"] for e in events(chunks)] == ["session.snapshot", "message.delta"]
    assert events(chunks)[1]["data"]["text"] == "in the gap"


async def test_a_run_stream_ends_on_a_run_completed_emitted_while_the_snapshot_is_read(
    user, session, settings, emit_during_snapshot
):
    settings.SSE_KEEPALIVE_SECONDS = 0.2
    run = await run_in(session, user)
    done = envelope(
        "run.completed", session_id=session.id, run_id=run.id, data={"status": "succeeded"}
    )
    emit_during_snapshot(done)
    client = AsyncClient()
    await client.aforce_login(user)
    response = await client.get(f"/api/v1/runs/{run.id}/events/")
    chunks = await chunks_until_keepalive(response.streaming_content)
    assert not any(chunk.startswith(KEEPALIVE) for chunk in chunks)  # it ended instead
    assert [e["type"] for e in events(chunks)] == ["session.snapshot", "run.completed"]


async def run_in(session: ChatSession, user):
    return await database_sync_to_async(
        lambda: run_create(agent=session.agent, user=user, session=session, task="t", transcript=[])
    )()
