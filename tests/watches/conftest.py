"""Fixtures of watches: an expert with the planner's task tools, users with overdue tasks, a
daily watch, and a tick that waits for the checks it started to be told."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from config import enqueue as enqueue_module
from reminders.models import Task
from reminders.watches.checks import watches_tick
from reminders.watches.models import Watch
from reminders.watches.services import watch_save
from tests.factories import make_agent, make_user

UTC = ZoneInfo("UTC")
# The watch checks every day at 09:00 UTC; it was created the day before the first slot.
CREATED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FIRST_SLOT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CHECK = "Show my tasks overdue by more than 30 days"


def overdue_task(user: Any, title: str, days: int = 40) -> Task:
    """A pending task of `user` due `days` ago (by the real date: the offline model's today)."""
    due = timezone.localdate() - timedelta(days=days)
    return Task.objects.create(user=user, title=title, due_date=due)


_NOW = {"at": CREATED}


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch) -> None:
    """The watches' "now" is the last tick's time (reminders.clock.now, as the planner's)."""
    _NOW["at"] = CREATED
    monkeypatch.setattr("reminders.clock.now", lambda: _NOW["at"])


def tick(at: datetime) -> dict[str, int]:
    """One beat of the watches at `at` (the clock moves there), then every check it started is
    finished and told."""
    _NOW["at"] = at
    counts = watches_tick(now=at)
    enqueue_module.wait_for_in_process_tasks()
    return counts


@pytest.fixture
def expert(db) -> Any:
    """An expert whose one tool lists the user's own tasks."""
    return make_agent("planner", display_name="Planner", tool_keys=["query_tasks"])


@pytest.fixture
def entry(db) -> Any:
    """The entry agent (it decides whom a finding is told to)."""
    return make_agent("assistant", display_name="Assistant", is_entry=True)


@pytest.fixture
def alice(db) -> Any:
    """A watched user."""
    return make_user("alice")


@pytest.fixture
def bob(db) -> Any:
    """Another watched user, whose tasks alice must never be told about."""
    return make_user("bob")


@pytest.fixture
def watch(expert, entry, alice) -> Watch:
    """A daily 09:00 (UTC) watch of the planner over alice's overdue tasks."""
    made = Watch(name="Overdue tasks", agent=expert, prompt=CHECK, schedule="every day at 09:00")
    made.timezone = "UTC"
    watch_save(watch=made, now=CREATED)
    made.users.add(alice)
    return made
