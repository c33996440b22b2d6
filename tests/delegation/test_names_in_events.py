"""A turn tags its events with each agent's name in the turn's language: a Traditional Chinese
question shows 助理 and 天氣專家, never the English display names or the Simplified ones."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from agents.demo import seed_demo_agents
from agents.models import Agent
from chat.models import ChatMessage
from tests.delegation.test_run_endings import turn_events

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_traditional_turn_names_every_agent_in_traditional(user):
    def team() -> None:
        seed_demo_agents()
        # Only a Simplified name for the weather expert: a Traditional turn converts it.
        Agent.objects.filter(name="weather").update(display_names={"zh-hans": "天气专家"})

    await database_sync_to_async(team)()
    events = await turn_events(user, "明天臺北會下雨嗎？")
    names = {e["agent"]["name"]: e["agent"]["display_name"] for e in events if e["agent"]}
    assert names.get("assistant") == "助理", names
    assert names.get("weather") == "天氣專家", names
    stored = await database_sync_to_async(
        lambda: {
            m.agent["name"]: m.agent["display_name"] for m in ChatMessage.objects.all() if m.agent
        }
    )()
    assert stored.get("weather") == "天氣專家", stored  # history shows what the stream showed


async def test_an_english_turn_keeps_the_english_names(user):
    await database_sync_to_async(seed_demo_agents)()
    events = await turn_events(user, "Will it rain in Taipei tomorrow?")
    names = {e["agent"]["name"]: e["agent"]["display_name"] for e in events if e["agent"]}
    assert names.get("assistant") == "Assistant" and names.get("weather") == "Weather expert"
