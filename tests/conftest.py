"""Shared fixtures: embedded mode by default, users, agents, and the fake OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from channels.layers import channel_layers
from django.core.cache import cache
from django.utils import translation

from config import enqueue as enqueue_module
from config import periodic
from delegation.usage.pricing import prices_forget
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI
from tests.server_logs import followed_logs

# Test modules import config.asgi, which would start the embedded timer (sweeper, reminder
# dispatcher) inside pytest, acting on the test database behind the tests' backs.
periodic.prevent_start()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test that ran servers or workers (tests/e2e) shows what they logged meanwhile."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        for title, text in followed_logs(item):
            report.sections.append((title, text))
    return report


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    """The test databases, dropped at the end as pytest-django drops them, after closing what
    the tests' own processes (workers, servers, dispatchers) may still hold open of them: a
    session still ending makes Postgres refuse the drop ("being accessed by other users")."""
    yield
    from django.db import DatabaseError, connections

    with django_db_blocker.unblock():
        for connection in connections.all():
            if connection.vendor != "postgresql":
                continue
            try:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
            except DatabaseError:  # not allowed to: the drop warns, as it did
                pass


@pytest.fixture(autouse=True)
def embedded_mode(request: pytest.FixtureRequest, settings) -> Iterator[None]:
    """In-process tasks and in-memory layer unless marked distributed; instant offline model."""
    settings.OFFLINE_MODEL_DELAY_MS = 0
    if request.node.get_closest_marker("distributed") is None:
        settings.CELERY_BROKER_URL = ""
        settings.CHANNEL_LAYERS = {
            "default": {"BACKEND": "config.inmemory_layer.ThreadSafeInMemoryChannelLayer"}
        }
    channel_layers.backends.clear()  # a fresh layer per test: queues belong to one event loop
    cache.clear()  # API throttle counters must not leak from one test into the next
    prices_forget()  # nor prices a rolled-back test created
    # LocaleMiddleware leaves the last request's language active in the thread: a test that
    # calls services directly starts in the default language, as a fresh worker would.
    translation.deactivate()
    yield
    enqueue_module.wait_for_in_process_tasks()
    channel_layers.backends.clear()


@pytest.fixture
def user(db):
    """An ordinary signed-in end user."""
    return make_user("alice")


@pytest.fixture
def other_user(db):
    """Another end user, whose data alice must never see."""
    return make_user("mallory")


@pytest.fixture
def fake_openai(settings) -> Iterator[FakeOpenAI]:
    """A running fake OpenAI server the `openai` provider is pointed at."""
    server = FakeOpenAI().start()
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_MAX_RETRIES = 0
    settings.OPENAI_TIMEOUT = 5.0
    yield server
    server.stop()


@pytest.fixture
def entry_agent(db):
    """The entry agent, on the offline model, with the built-in tools."""
    return make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        tool_keys=["current_time", "calculate", "search_my_chats"],
    )


@pytest.fixture
def openai_entry_agent(db, fake_openai):
    """The entry agent on the openai provider (the fake server)."""
    return make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        provider="openai",
        model="fake-model",
        tool_keys=["current_time", "calculate"],
    )


@dataclass
class EmbeddedBeat:
    """What config.asgi hands embedded mode's timer: (interval, job) pairs and start-up jobs."""

    jobs: list[tuple[float, Any]]
    at_start: list[Any]


@pytest.fixture
def embedded_beat(monkeypatch) -> EmbeddedBeat:
    """Load config.asgi again with the timer's start caught, and say what it was given."""
    import importlib
    import sys

    beat = EmbeddedBeat(jobs=[], at_start=[])

    def caught(jobs: list, at_start: Any = ()) -> bool:
        beat.jobs.extend(jobs)
        beat.at_start.extend(at_start)
        return False

    monkeypatch.setattr("config.periodic.start_in_process_beat", caught)
    if "config.asgi" in sys.modules:
        importlib.reload(sys.modules["config.asgi"])
    else:
        importlib.import_module("config.asgi")
    return beat
