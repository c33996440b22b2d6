"""A whole turn over the websocket: streamed, tagged, saved, and replayed identically."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from delegation.models import Run
from tests.chat.helpers import connect, events_until, send_frame

pytestmark = pytest.mark.django_db(transaction=True)


async def test_turn_streams_tool_call_and_answer_then_replays_the_same(user, entry_agent):
    ws = await connect(user)
    frame = send_frame("what is 6*7?")
    await ws.send_json_to(frame)
    events = await events_until(ws)
    types = [e["type"] for e in events]
    assert types[0] == "message.created"
    assert types[1:3] == ["tool.called", "tool.result"]
    assert "message.delta" in types and types[-2:] == ["message.completed", "run.completed"]
    result = next(e for e in events if e["type"] == "tool.result")
    assert result["data"]["ok"] and result["data"]["result"]["value"] == 42
    answer = next(e for e in events if e["type"] == "message.completed")
    assert "6*7 = 42" in answer["data"]["text"]
    tag = answer["agent"]
    assert tag == {
        "kind": "entry",
        "name": "assistant",
        "display_name": "Assistant",
        "depth": 0,
        "path": ["assistant"],
    }
    seqs = [e["seq"] for e in events if e["run_id"] and e["type"] != "message.created"]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    deltas = "".join(e["data"]["text"] for e in events if e["type"] == "message.delta")
    assert deltas == answer["data"]["text"]

    await ws.send_json_to({"type": "session.join", "session_id": frame["session_id"]})
    snapshot = await ws.receive_json_from(timeout=5)
    assert snapshot["type"] == "session.snapshot"
    stored = snapshot["data"]["messages"]
    assert [m["role"] for m in stored] == ["user", "tool", "agent"]
    assert stored[0]["content"] == "what is 6*7?"
    assert stored[1]["tool"]["result"]["value"] == 42
    assert stored[2]["content"] == answer["data"]["text"] and stored[2]["agent"] == tag
    assert snapshot["data"]["active_run_id"] is None
    await ws.disconnect()


async def test_same_message_id_twice_gives_one_row_and_one_run(user, entry_agent):
    ws = await connect(user)
    frame = send_frame("hello")
    await ws.send_json_to(frame)
    await events_until(ws)
    await ws.send_json_to(frame)
    ack = await ws.receive_json_from(timeout=5)
    assert ack["type"] == "message.created" and ack["data"]["duplicate"] is True
    assert await _count(ChatMessage, id=frame["message_id"]) == 1
    assert await _count(Run, user_message_id=frame["message_id"]) == 1
    await ws.disconnect()


async def test_second_turn_sends_earlier_turns_to_the_model(user, openai_entry_agent, fake_openai):
    from tests.fake_openai import text

    fake_openai.script(text("First ", "answer."), text("Second answer."))
    ws = await connect(user)
    session_id = uuid.uuid4()
    await ws.send_json_to(send_frame("first question", session_id=session_id))
    await events_until(ws)
    await ws.send_json_to(send_frame("second question", session_id=session_id))
    await events_until(ws)
    second = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "First answer."
    assert await _count(ChatSession, id=session_id) == 1
    await ws.disconnect()


async def _count(model, **filters) -> int:
    from channels.db import database_sync_to_async

    return await database_sync_to_async(lambda: model.objects.filter(**filters).count())()
