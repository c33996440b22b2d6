"""A long session opens with its newest messages within SNAPSHOT_MAX_BYTES; older ones come a
page at a time on request (`session.history`), each once and in order; nobody else's."""

from __future__ import annotations

import json
import uuid

import pytest
from channels.db import database_sync_to_async

from agents.models import Agent
from chat.models import ChatMessage, ChatSession, MessageRole
from tests.chat.helpers import connect
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)


def long_session(user, count: int, chars: int) -> ChatSession:
    agent = Agent.objects.filter(is_entry=True).first() or make_agent("assistant", is_entry=True)
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    for n in range(count):
        role = MessageRole.USER if n % 2 == 0 else MessageRole.AGENT
        ChatMessage.objects.create(
            id=uuid.uuid4(), session=session, role=role, content=f"{n:03d} " + "字" * chars
        )
    return session


async def join(ws, session: ChatSession) -> dict:
    await ws.send_json_to({"type": "session.join", "session_id": str(session.id)})
    event = await ws.receive_json_from(timeout=5)
    assert event["type"] == "session.snapshot", event
    return event["data"]


async def history(ws, session: ChatSession, before: str) -> dict:
    frame = {"type": "session.history", "session_id": str(session.id), "before": before}
    await ws.send_json_to(frame)
    return await ws.receive_json_from(timeout=5)


async def test_a_long_session_opens_with_its_newest_messages_and_pages_back(user, settings):
    settings.SNAPSHOT_MAX_BYTES = 20_000
    session = await database_sync_to_async(long_session)(user, 40, 1000)  # ~3 KB each
    ws = await connect(user)
    snapshot = await join(ws, session)
    assert len(json.dumps(snapshot, ensure_ascii=False).encode()) < 25_000
    assert snapshot["has_earlier"] is True
    shown = [int(m["content"][:3]) for m in snapshot["messages"]]
    assert shown == list(range(40 - len(shown), 40))  # the newest, in order

    page, oldest, pages = snapshot, snapshot["messages"][0]["id"], 0
    while page["has_earlier"]:
        event = await history(ws, session, before=oldest)
        assert event["type"] == "session.history"
        page, pages = event["data"], pages + 1
        older = [int(m["content"][:3]) for m in page["messages"]]
        assert older == list(range(shown[0] - len(older), shown[0]))  # just before, in order
        shown, oldest = older + shown, page["messages"][0]["id"]
    assert shown == list(range(40))
    assert pages >= 3
    await ws.disconnect()


async def test_a_short_session_has_nothing_earlier(user):
    session = await database_sync_to_async(long_session)(user, 3, 10)
    ws = await connect(user)
    snapshot = await join(ws, session)
    assert [m["content"][:3] for m in snapshot["messages"]] == ["000", "001", "002"]
    assert snapshot["has_earlier"] is False
    await ws.disconnect()


async def test_one_message_larger_than_the_budget_is_still_shown(user, settings):
    settings.SNAPSHOT_MAX_BYTES = 1000
    session = await database_sync_to_async(long_session)(user, 2, 5000)
    ws = await connect(user)
    snapshot = await join(ws, session)
    assert [m["content"][:3] for m in snapshot["messages"]] == ["001"]
    assert snapshot["has_earlier"] is True
    await ws.disconnect()


async def test_history_of_another_users_session_or_message_is_not_found(user, other_user):
    mine = await database_sync_to_async(long_session)(user, 2, 10)
    theirs = await database_sync_to_async(long_session)(other_user, 2, 10)
    their_message = await ChatMessage.objects.filter(session=theirs).afirst()
    ws = await connect(user)
    event = await history(ws, theirs, before=str(their_message.id))
    assert (event["type"], event["data"]["code"]) == ("error", "session_not_found")
    event = await history(ws, mine, before=str(their_message.id))  # not a message of mine
    assert (event["type"], event["data"]["code"]) == ("error", "message_not_found")
    event = await history(ws, mine, before="not-a-uuid")
    assert (event["type"], event["data"]["code"]) == ("error", "invalid")
    await ws.disconnect()


async def test_a_session_is_read_a_slice_at_a_time_until_the_budget_is_spent(user, settings):
    session = await database_sync_to_async(long_session)(user, 250, 10)  # three slices
    ws = await connect(user)
    snapshot = await join(ws, session)
    assert [int(m["content"][:3]) for m in snapshot["messages"]] == list(range(250))
    assert snapshot["has_earlier"] is False
    await ws.disconnect()
