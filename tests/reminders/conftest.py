"""Fixtures for the planner: a pinned clock, users in given timezones, fixed weather, tool calls."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.registry import ToolContext, execute, get_tool
from chat.models import ChatPreference
from reminders import weather
from tests.factories import make_user

TAIPEI = ZoneInfo("Asia/Taipei")
# Wednesday 11 June 2025, 10:00 in Taipei.
WEDNESDAY_10 = datetime(2025, 6, 11, 10, 0, tzinfo=TAIPEI)


def user_in(zone: str, name: str | None = None) -> Any:
    """A user whose chat preference is `zone`."""
    user = make_user(name)
    ChatPreference.objects.create(user=user, timezone=zone)
    return user


def call(user: Any, key: str, **args: Any) -> dict[str, Any]:
    """Run a registry tool as the model would (schema validation included); the result body
    for ok calls, else {"registry_error": code}."""
    result = execute(get_tool(key), ToolContext(user=user), json.dumps(args))
    return result.data if result.ok else {"registry_error": result.error_code}


class Clock:
    """The planner's "now", settable by a test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: datetime) -> None:
        self.at = at
        monkeypatch.setattr("reminders.clock.now", lambda: self.at)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """Tools see Wednesday 11 June 2025 10:00 Taipei time until the test moves it."""
    return Clock(monkeypatch, WEDNESDAY_10)


@pytest.fixture
def taipei_user(db) -> Any:
    """A user living in Asia/Taipei."""
    return user_in("Asia/Taipei", "tina")


@pytest.fixture
def fixed_weather(monkeypatch) -> dict[str, str]:
    """The offline provider with per-city conditions the test sets (city -> condition)."""
    overrides: dict[str, str] = {}
    monkeypatch.setattr(
        weather, "weather_provider", lambda: weather.OfflineWeatherProvider(overrides)
    )
    return overrides
