"""Fixtures for humans-in-the-loop tests: scripted agents, staff, the side-effect table."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group

from tests.e2e.conftest import flush_redis, workers  # noqa: F401  (real Celery workers)
from tests.factories import make_agent, make_user
from tests.fake_openai import Team
from tests.humans.effect_tool import effect_table


@pytest.fixture
def team(fake_openai) -> Team:
    """Per-agent scripted replies on the fake OpenAI server."""
    return Team(fake_openai)


@pytest.fixture
def effects(db) -> None:
    """The table the side-effect tool writes to."""
    effect_table()


@pytest.fixture
def staff(db) -> Any:
    """A staff member (not a superuser) in the "Finance" group."""
    member = make_user("stella", is_staff=True)
    member.groups.add(Group.objects.get_or_create(name="Finance")[0])
    return member


def agent(name: str, *, subagents: tuple = (), **fields: Any) -> Any:
    """An agent on the fake OpenAI server (its system prompt says "You are NAME.")."""
    defaults: dict[str, Any] = {
        "provider": "openai",
        "model": "fake",
        "display_name": name.title(),
        "tags": [name],
        "max_steps": 10,
    }
    return make_agent(name, subagents=list(subagents), **{**defaults, **fields})


async def wait_for(predicate: Any, timeout: float = 15) -> None:
    """Poll a database predicate until it holds (a run that waits has no event to await)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await sync_to_async(predicate)():
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)
