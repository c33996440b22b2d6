"""The Redis-restart drill: Redis (broker, channel layer, run-end flags) restarts empty while
experts stream and are about to act, and a client per session follows it as the page does
(reconnects on any close, re-joins). Every turn still succeeds, every requested side effect
happens once, no message is left `streaming`, and every client ends showing what the database
holds. CI runs a small drill; DRILL_TURNS=30 DRILL_RESTARTS=10 is the issue's."""

from __future__ import annotations

import datetime
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import transaction
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from chat.models import ChatMessage, MessageStatus
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from reminders.models import Task
from tests.delegation.conftest import make_team
from tests.e2e.conftest import RedisServer, Workers, session_cookie
from tests.fake_openai import FakeOpenAI, Reply, Team, delegate, text
from tests.server_logs import output_path
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

TURNS = int(os.environ.get("DRILL_TURNS", "3"))
RESTARTS = int(os.environ.get("DRILL_RESTARTS", "2"))
OUTAGE_SECONDS = 0.75  # three chunks of an expert's stream go by while Redis is down
DEADLINE_SECONDS = 120 + 8 * TURNS  # two worker processes work through the turns
PREFIX = "plan "


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
    title = body["messages"][-1]["content"].removeprefix(PREFIX)
    n = int(title.rsplit(" ", 1)[1])
    day = (datetime.date.today() + datetime.timedelta(days=2 + n // 8)).isoformat()
    hour = 9 + n % 8
    arguments = {"title": title, "date": day, "start": f"{hour}:00", "end": f"{hour}:30"}
    return Reply(
        text_chunks=[f"thinking {k} " for k in range(12)],
        chunk_interval=0.25,
        tool_calls=[("create_task", json.dumps({**arguments, "confirm": True}))],
    )


def follow(url: str, origin: str, cookie: str, session_id: str, deadline: float) -> list[dict]:
    """Follow one session as the page does (any close: reconnect, re-join; no other timeout:
    a socket that stays open and silent is never left) until its turn has ended; then the
    messages a fresh join shows."""
    join = json.dumps({"type": "session.join", "session_id": session_id})
    ended = False
    while time.monotonic() < deadline:
        try:
            with ws_connect(url, origin=origin, additional_headers={"Cookie": cookie}) as ws:
                ws.send(join)
                while not ended:
                    event = json.loads(ws.recv(timeout=deadline - time.monotonic()))
                    if event["type"] == "session.snapshot":
                        ended = event["data"]["active_run_id"] is None and bool(
                            event["data"]["messages"][1:]
                        )
                    elif event["type"] == "run.completed" and event["agent"]["depth"] == 0:
                        ended = True
                ws.send(join)
                while True:
                    event = json.loads(ws.recv(timeout=30))
                    if event["type"] == "session.snapshot":
                        return event["data"]["messages"]
        except (ConnectionClosed, ConnectionError):
            time.sleep(0.5)  # the page's backoff
    raise AssertionError(f"the client of {session_id} never saw its turn end")


def test_redis_restarts_mid_delegation_lose_nothing(
    workers: Workers, broker: RedisServer, start_asgi_server, user, fake_openai: FakeOpenAI
):
    agents = make_team(boss=["planner"], planner=[])
    agents["planner"].tool_keys = ["create_task"]
    agents["planner"].save()
    team = Team(fake_openai)
    team.always.update(boss=_boss, planner=_planner)
    workers.start("w1", beat=True, **worker_env(fake_openai, broker.url))
    server = start_asgi_server(REDIS_URL=broker.url, RELAY_PROBE_SECONDS="1")
    titles = [f"call client {n:02d}" for n in range(TURNS)]

    roots = []
    for title in titles:
        with transaction.atomic():
            sent = turn_start(
                user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=PREFIX + title
            )
        roots.append(sent.run)
    url, cookie = server.url.replace("http", "ws") + "/ws/chat/", session_cookie(user)
    deadline = time.monotonic() + DEADLINE_SECONDS
    with ThreadPoolExecutor(TURNS) as clients:
        shown = [
            clients.submit(follow, url, server.url, cookie, str(run.session_id), deadline)
            for run in roots
        ]
        # Experts are streaming: Redis restarts under them, again and again.
        wait_until(lambda: len(team.requests.get("planner", [])) >= 1, 30)
        for _ in range(RESTARTS):
            broker.kill()
            time.sleep(OUTAGE_SECONDS)  # how long the outage lasts (the drill's length)
            broker.start()
        wait_until(
            lambda: all(Run.objects.get(pk=run.pk).is_final for run in roots),
            DEADLINE_SECONDS,
            what=f"every turn to end (see {output_path('celery-w1.log')})",
        )
        views = [future.result() for future in shown]

    runs = Run.objects.filter(session__user=user)
    failed = {str(r.path): (r.status, r.error) for r in runs if r.status != RunStatus.SUCCEEDED}
    assert failed == {}, failed
    assert sorted(Task.objects.filter(user=user).values_list("title", flat=True)) == titles
    streaming = ChatMessage.objects.filter(session__user=user, status=MessageStatus.STREAMING)
    assert list(streaming.values_list("role", "content")) == []
    for run, view in zip(roots, views, strict=True):  # each client shows what is saved
        saved = ChatMessage.objects.filter(session_id=run.session_id).order_by("created_at", "id")
        assert [(m["id"], m["status"], m["content"]) for m in view] == [
            (str(m.id), m.status, m.content) for m in saved
        ]
