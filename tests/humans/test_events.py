"""The human waits over the websocket: the user's page sees the wait and answers `ask_user`
(or cancels) with frames; staff sockets get `inbox.*` events for the items they may decide,
once each; nobody else's frame reaches an item."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group

from chat.events import flush_events
from delegation.humans.models import InboxItem
from tests.chat.helpers import connect, events_until, send_frame
from tests.factories import make_user
from tests.fake_openai import text, tool_call
from tests.humans.conftest import agent
from tests.humans.helpers import client, decide

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


async def test_the_user_answers_ask_user_with_a_frame_and_only_they_can(user, other_user, team):
    await database_sync_to_async(agent)("boss", is_entry=True, tool_keys=["ask_user"])
    team.script(
        "boss",
        tool_call("ask_user", {"question": "Tea or coffee?", "options": ["Tea", "Coffee"]}),
        text("Tea it is."),
    )
    ws = await connect(user)
    await ws.send_json_to(send_frame("something to drink"))
    events = await events_until(ws, "run.waiting")
    called = next(e for e in events if e["type"] == "tool.called")
    waiting = events[-1]
    assert called["data"]["human"]["options"] == ["Tea", "Coffee"]
    assert waiting["data"]["audience"] == "user" and waiting["data"]["waiting_for"] == "you"
    assert waiting["message_id"] == called["message_id"]
    item_id = waiting["data"]["item_id"]

    intruder = await connect(other_user)
    await intruder.send_json_to({"type": "human.answer", "item_id": item_id, "answer": "Coffee"})
    refused = await intruder.receive_json_from(timeout=5)
    assert refused["type"] == "error" and refused["data"]["code"] == "inbox_item_not_found"
    await intruder.disconnect()

    await ws.send_json_to({"type": "human.answer", "item_id": item_id, "answer": "Tea"})
    events = await events_until(ws, "run.completed", depth=0)
    resumed = next(e for e in events if e["type"] == "run.resumed")
    result = next(e for e in events if e["type"] == "tool.result")
    assert resumed["data"]["status"] == "answered"
    assert result["data"]["ok"] and result["data"]["result"]["answer"] == "Tea"
    assert result["data"]["human"]["status"] == "answered"
    assert events[-1]["data"]["status"] == "succeeded"
    await ws.send_json_to({"type": "human.answer", "item_id": item_id, "answer": "Coffee"})
    again = await ws.receive_json_from(timeout=5)
    assert again["data"]["code"] == "already_decided"
    await ws.send_json_to({"type": "human.answer", "item_id": item_id, "answer": 3})
    assert (await ws.receive_json_from(timeout=5))["data"]["code"] == "invalid"
    await ws.disconnect()


async def test_the_user_cancels_a_wait_with_a_frame(user, team):
    await database_sync_to_async(agent)("boss", is_entry=True, tool_keys=["ask_human"])
    team.script("boss", tool_call("ask_human", {"question": "Refund?"}), text("Cancelled, ok."))
    ws = await connect(user)
    await ws.send_json_to(send_frame("refund please"))
    waiting = (await events_until(ws, "run.waiting"))[-1]
    assert waiting["data"]["waiting_for"] == "a staff member"
    await ws.send_json_to({"type": "human.cancel", "item_id": waiting["data"]["item_id"]})
    events = await events_until(ws, "run.completed", depth=0)
    result = next(e for e in events if e["type"] == "tool.result")
    assert result["data"]["error"]["code"] == "human_cancelled"
    await ws.disconnect()


async def test_staff_sockets_get_the_items_they_may_decide_once_each(user, staff, team):
    def setup():
        agent("boss", is_entry=True, tool_keys=["ask_human"], human_group="Finance")
        outsider = make_user("otto", is_staff=True)
        outsider.groups.add(Group.objects.create(name="Legal"))
        return outsider, make_user("root", is_staff=True, is_superuser=True)

    outsider, superuser = await database_sync_to_async(setup)()
    team.script("boss", tool_call("ask_human", {"question": "Refund?"}), text("Done."))
    member, other, boss = [await connect(p) for p in (staff, outsider, superuser)]
    ws = await connect(user)
    await ws.send_json_to(send_frame("refund please"))
    await events_until(ws, "run.waiting")
    for socket in (member, boss):
        event = await socket.receive_json_from(timeout=5)
        assert event["type"] == "inbox.new_item"
        assert event["data"]["item"]["question"] == "Refund?"
        assert event["data"]["item"]["group"] == "Finance" and event["session_id"] is None
    await sync_to_async(flush_events)()
    assert await other.receive_nothing(timeout=0.3)
    item = await database_sync_to_async(InboxItem.objects.get)()
    api = await sync_to_async(client)(staff)
    response = await sync_to_async(decide)(api, item.id, decision="reject", note="no")
    assert response.status_code == 200
    for socket in (member, boss):
        event = await socket.receive_json_from(timeout=5)
        assert event["type"] == "inbox.item_decided"
        assert event["data"]["item"]["status"] == "rejected"
        assert await socket.receive_nothing(timeout=0.2)  # once, not once per group joined
    for socket in (member, other, boss, ws):
        await socket.disconnect()
