"""Small factories for test data."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model

from agents.models import Agent
from agents.services import agent_revision_record

_counter = itertools.count(1)


def make_user(username: str | None = None, **fields: Any) -> Any:
    """A user with password 'pw'."""
    name = username or f"user{next(_counter)}"
    return get_user_model().objects.create_user(name, password="pw", **fields)


def make_agent(name: str | None = None, *, subagents: list[Agent] = (), **fields: Any) -> Agent:
    """An enabled agent with a first revision recorded, as admin would save it."""
    name = name or f"agent{next(_counter)}"
    defaults: dict[str, Any] = {
        "display_name": name.title(),
        "description": f"{name} agent",
        "provider": "offline",
        "system_prompt": f"You are {name}.",
        "tool_keys": [],
    }
    defaults.update(fields)
    agent = Agent.objects.create(name=name, **defaults)
    if subagents:
        agent.allowed_subagents.set(subagents)
    agent_revision_record(agent=agent, comment="test")
    agent.refresh_from_db()
    return agent
