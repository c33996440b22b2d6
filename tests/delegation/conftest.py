"""Fixtures for delegation tests: a scripted team of agents on the fake OpenAI server."""

from __future__ import annotations

import pytest

from config import enqueue
from tests.factories import make_agent
from tests.fake_openai import Team


@pytest.fixture
def team(fake_openai) -> Team:
    """Per-agent scripted replies (agents from `make_team` say "You are NAME.")."""
    return Team(fake_openai)


def make_team(**subagents: list[str]) -> dict[str, object]:
    """Agents on the openai provider; keyword = agent name, value = names it may delegate to.
    The first one is the entry agent."""
    agents = {}
    for index, name in enumerate(subagents):
        agents[name] = make_agent(
            name,
            provider="openai",
            model="fake",
            is_entry=index == 0,
            display_name=name.title(),
            tags=[name],
            max_steps=10,
        )
    for name, allowed in subagents.items():
        if allowed:
            agents[name].allowed_subagents.set([agents[a] for a in allowed])
            from agents.services import agent_revision_record

            agent_revision_record(agent=agents[name])
    return agents


@pytest.fixture
def sent(settings, monkeypatch) -> list:
    """Work published to a worker (none runs): task bodies run here, keeping what they may."""
    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = ""
    published = []
    monkeypatch.setattr(enqueue, "_publish", lambda task, args: published.append(args))
    return published
