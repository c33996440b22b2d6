"""The Redis-restart drill: Redis (broker, channel layer, run-end flags) restarts empty while
experts stream and are about to act. Every turn still succeeds, every requested side effect
happens once, and no message is left `streaming`."""

from __future__ import annotations

import datetime
import json
import time
import uuid
from typing import Any

import pytest
from django.db import transaction

from chat.models import ChatMessage, MessageStatus
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from reminders.models import Task
from tests.delegation.conftest import make_team
from tests.e2e.conftest import RedisServer, Workers
from tests.fake_openai import FakeOpenAI, Reply, Team, delegate, text
from tests.server_logs import output_path
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

TITLES = ["call Ana", "book the flights", "renew the lease"]
RESTARTS = 2
OUTAGE_SECONDS = 0.75  # three chunks of an expert's stream go by while Redis is down


def worker_env(fake_openai: FakeOpenAI, redis_url: str) -> dict[str, str]:
    """Workers on the private Redis; short leases and sweeps so recovery is quick."""
    return {
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MAX_RETRIES": "0",
        "OPENAI_TIMEOUT": "40",
        "RUN_LEASE_SECONDS": "3",
        "SWEEP_INTERVAL_SECONDS": "1",
        "QUEUED_STALE_SECONDS": "3",
    }


def _has_tool_result(body: dict[str, Any]) -> bool:
    return any(message["role"] == "tool" for message in body["messages"])


def _boss(body: dict[str, Any]) -> Reply:
    """Asks the planner to plan the user's task, then reports that it is done."""
    if _has_tool_result(body):
        return text("boss: ", "done")
    return delegate("planner", body["messages"][-1]["content"])


def _planner(body: dict[str, Any]) -> Reply:
    """Streams its thinking slowly (Redis goes away meanwhile), then creates the task."""
    if _has_tool_result(body):
        return text("planned")
    task = body["messages"][-1]["content"]
    title = next(title for title in TITLES if title in task)
    day = (datetime.date.today() + datetime.timedelta(days=2)).isoformat()
    hour = 9 + TITLES.index(title)
    arguments = {"title": title, "date": day, "start": f"{hour}:00", "end": f"{hour}:30"}
    return Reply(
        text_chunks=[f"thinking {n} " for n in range(12)],
        chunk_interval=0.25,
        tool_calls=[("create_task", json.dumps(arguments))],
    )


def test_redis_restarts_mid_delegation_lose_nothing(
    workers: Workers, broker: RedisServer, user, fake_openai: FakeOpenAI
):
    agents = make_team(boss=["planner"], planner=[])
    agents["planner"].tool_keys = ["create_task"]
    agents["planner"].save()
    team = Team(fake_openai)
    team.always.update(boss=_boss, planner=_planner)
    workers.start("w1", beat=True, **worker_env(fake_openai, broker.url))

    roots = []
    for title in TITLES:
        with transaction.atomic():
            sent = turn_start(
                user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=f"plan {title}"
            )
        roots.append(sent.run.pk)
    # Every expert is streaming: Redis restarts under them, more than once.
    wait_until(lambda: len(team.requests.get("planner", [])) >= len(TITLES), 30)
    for _ in range(RESTARTS):
        broker.kill()
        time.sleep(OUTAGE_SECONDS)  # how long the outage lasts (the drill's length, no deadline)
        broker.start()

    wait_until(
        lambda: all(Run.objects.get(pk=pk).is_final for pk in roots),
        120,
        what=f"every turn to end (see {output_path('celery-w1.log')})",
    )
    runs = Run.objects.filter(session__user=user)
    failed = {str(r.path): (r.status, r.error) for r in runs if r.status != RunStatus.SUCCEEDED}
    assert failed == {}, failed
    assert sorted(Task.objects.filter(user=user).values_list("title", flat=True)) == sorted(TITLES)
    streaming = ChatMessage.objects.filter(session__user=user, status=MessageStatus.STREAMING)
    assert list(streaming.values_list("role", "content")) == []
