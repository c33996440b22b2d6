"""A tool that returns megabytes, called with megabytes of arguments: what its events and its
saved message carry stays bounded (as the model's own copy is), so no frame outgrows a socket
and the session still opens."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async

from agents import registry
from agents.registry import Tool
from chat.models import ChatMessage, MessageRole
from delegation.humans.models import InboxItem
from tests.chat.helpers import connect, events_until, send_frame
from tests.fake_openai import text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)

MEGABYTES = "数据" * 600_000  # 3.6 MB of UTF-8


@pytest.fixture
def dump_tool(openai_entry_agent) -> Iterator[str]:
    """A tool answering with megabytes, on the entry agent."""
    key = "test_dump"
    registry.register(Tool(key, "Dump everything.", {"type": "object"}, lambda c, a: MEGABYTES))
    openai_entry_agent.tool_keys = [*openai_entry_agent.tool_keys, key]
    openai_entry_agent.save()
    yield key
    registry._TOOLS.pop(key, None)


async def test_a_megabyte_tool_call_and_result_reach_people_bounded(
    user, fake_openai, dump_tool, settings
):
    limit = settings.TOOL_RESULT_MAX_CHARS
    fake_openai.script(tool_call(dump_tool, {"pad": MEGABYTES}), text("Done."))
    ws = await connect(user)
    await ws.send_json_to(send_frame("dump it"))
    events = await events_until(ws)
    sizes = {e["type"]: len(json.dumps(e, ensure_ascii=False).encode()) for e in events}
    assert max(sizes.values()) < 4 * limit * 3, sizes  # (3 bytes a character, at most)
    result = next(e for e in events if e["type"] == "tool.result")["data"]
    assert result["ok"] is True and result["truncated"] is True
    assert len(result["result"]) == limit and len(result["arguments"]) == limit
    saved = await database_sync_to_async(ChatMessage.objects.get)(role=MessageRole.TOOL)
    assert len(json.dumps(saved.tool, ensure_ascii=False)) < 3 * limit
    tool_message = fake_openai.requests[1]["messages"][-1]
    assert json.loads(tool_message["content"])["truncated"] is True  # the model's copy, as before
    await ws.disconnect()


async def test_a_call_waiting_for_approval_shows_its_megabytes_of_arguments_bounded(
    user, fake_openai, dump_tool, openai_entry_agent, settings
):
    openai_entry_agent.require_approval = True
    openai_entry_agent.approval_tool_keys = [dump_tool]
    await database_sync_to_async(openai_entry_agent.save)()
    fake_openai.script(tool_call(dump_tool, {"pad": MEGABYTES}))
    ws = await connect(user)
    await ws.send_json_to(send_frame("dump it, once approved"))
    events = await events_until(ws, "run.waiting")
    called = next(e for e in events if e["type"] == "tool.called")
    assert len(json.dumps(called, ensure_ascii=False).encode()) < 4 * settings.TOOL_RESULT_MAX_CHARS
    assert len(called["data"]["arguments"]) == settings.TOOL_RESULT_MAX_CHARS
    item = await InboxItem.objects.aget()
    assert item.arguments == {"pad": MEGABYTES}  # what runs, once approved, is all of it
    await ws.disconnect()
