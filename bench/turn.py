"""Benchmark: one streamed single-agent turn, embedded and distributed, beside the raw client.

A zero-latency fake OpenAI server answers every turn with a tool call and then a 20-chunk text
answer. We time, at a real websocket client, `message.send` until `run.completed`, against a real
ASGI server (daphne): embedded (SQLite, in-process pool, in-memory layer) and distributed (daphne
+ a Celery worker, Postgres, channels_redis). The raw `openai` client making the same two calls is
the floor. Prints p50/p90 in ms, and SQL queries per turn.

Usage: .venv/bin/python bench/turn.py [--turns 40] [--skip-distributed]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI, text, tool_call  # noqa: E402

ANSWER = [f"word{i} " for i in range(20)]


def fake_model(body: dict) -> object:
    """Tool call when the last message is the user's, else the streamed answer."""
    return (
        text(*ANSWER)
        if body["messages"][-1]["role"] == "tool"
        else tool_call("calculate", {"expression": "6*7"})
    )


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p90 in milliseconds."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return statistics.median(ordered) * 1000, p90 * 1000


def raw_client_turns(base_url: str, turns: int) -> list[float]:
    """The same two streamed calls with the bare `openai` client, no persistence."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    tools = [
        {"type": "function", "function": {"name": "calculate", "parameters": {"type": "object"}}}
    ]
    samples = []
    for _ in range(turns):
        started = time.perf_counter()
        messages = [{"role": "user", "content": "what is 6*7?"}]
        for _call in range(2):
            stream = client.chat.completions.create(
                model="m", messages=messages, tools=tools, stream=True
            )
            for _chunk in stream:
                pass
            messages = [*messages, {"role": "tool", "content": "{}", "tool_call_id": "x"}]
        samples.append(time.perf_counter() - started)
    return samples


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env: dict, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


SETUP = """
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from agents.models import Agent
from agents.services import agent_revision_record
Agent.objects.filter(is_entry=True).update(is_entry=False)
agent, _ = Agent.objects.update_or_create(name="bench", defaults=dict(
    display_name="Bench", provider="openai", model="m", tool_keys=["calculate"], is_entry=True,
    system_prompt="bench"))
agent_revision_record(agent=agent)
user, _ = get_user_model().objects.get_or_create(username="bench")
s = SessionStore(); s["_auth_user_id"] = str(user.pk)
s["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
s["_auth_user_hash"] = user.get_session_auth_hash(); s.create(); print(s.session_key)
"""


async def websocket_turns(port: int, session_key: str, turns: int) -> list[float]:
    """Time message.send → run.completed at a websocket client, one fresh session per turn."""
    import websockets

    headers = {"Cookie": f"sessionid={session_key}", "Origin": f"http://127.0.0.1:{port}"}
    samples = []
    async with websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/", additional_headers=headers
    ) as ws:
        for _ in range(turns):
            frame = {
                "type": "message.send",
                "session_id": str(uuid.uuid4()),
                "message_id": str(uuid.uuid4()),
                "text": "what is 6*7?",
            }
            started = time.perf_counter()
            await ws.send(json.dumps(frame))
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if event["type"] == "error":
                    raise RuntimeError(event)
                if event["type"] == "run.completed":
                    break
            samples.append(time.perf_counter() - started)
    return samples


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on {port} did not start")


def served_turns(env: dict, turns: int, with_worker: bool) -> list[float]:
    """Start daphne (and a Celery worker), set up, run warm-up and measured turns."""
    manage(env, "migrate", "--no-input")
    session_key = manage(env, "shell", "-c", SETUP).strip().splitlines()[-1]
    port = free_port()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "daphne", "-p", str(port), "config.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    if with_worker:
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "--concurrency=2",
                    "--without-mingle",
                    "--without-gossip",
                    "--loglevel=WARNING",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        wait_for_port(port)
        asyncio.run(websocket_turns(port, session_key, 5))  # warm-up
        return asyncio.run(websocket_turns(port, session_key, turns))
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=15)


def queries_per_turn(env: dict) -> tuple[int, int]:
    """SQL queries for one turn, counted in-process: (sending the message, running the turn)."""
    script = """
import uuid
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.contrib.auth import get_user_model
from chat.services import message_send
from delegation.runner import run_advance
user = get_user_model().objects.get(username="bench")
with CaptureQueriesContext(connection) as send:
    sent = message_send(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="6*7?")
with CaptureQueriesContext(connection) as turn:
    run_advance(run_id=sent.run.id)
print(len(send.captured_queries), len(turn.captured_queries))
"""
    out = manage(
        {**env, "TASKS_RUN_SYNC": "0", "CELERY_BROKER_URL": "memory://"},
        "shell",
        "-v",
        "0",
        "-c",
        script,
    )
    send, turn = out.split()[-2:]
    return int(send), int(turn)


def main() -> None:
    """Run every mode and print one table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--skip-distributed", action="store_true")
    options = parser.parse_args()

    fake = FakeOpenAI().start()
    fake.fallback = fake_model
    base = {
        **os.environ,
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "x",
        "DJANGO_DEBUG": "1",
        "DJANGO_LOG_LEVEL": "WARNING",
        "OPENAI_MAX_RETRIES": "0",
    }
    base.pop("REDIS_URL", None)
    rows = [
        (
            "raw openai client (2 calls, no persistence)",
            raw_client_turns(fake.base_url, options.turns),
        )
    ]
    with tempfile.TemporaryDirectory() as tmp:
        embedded = {**base, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        rows.append(
            (
                "embedded: daphne + in-process pool + SQLite",
                served_turns(embedded, options.turns, with_worker=False),
            )
        )
        sqlite_queries = queries_per_turn(embedded)
    pg_queries = None
    if not options.skip_distributed:
        pg = os.environ.get("PG_URL", "postgres://postgres@127.0.0.1:5432/agent_platform")
        subprocess.run(
            ["createdb", "-h", "127.0.0.1", "-U", "postgres", "agent_platform_bench"],
            capture_output=True,
        )
        distributed = {
            **base,
            "DATABASE_URL": pg.rsplit("/", 1)[0] + "/agent_platform_bench",
            "REDIS_URL": "redis://127.0.0.1:6379/14",
        }
        rows.append(
            (
                "distributed: daphne + Celery worker + Postgres + Redis",
                served_turns(distributed, options.turns, with_worker=True),
            )
        )
        pg_queries = queries_per_turn(distributed)
    fake.stop()

    raw_p50 = percentiles(rows[0][1])[0]
    print(
        f"\nOne streamed turn (tool call + 20-chunk answer), {options.turns} turns each, "
        f"zero-latency fake model"
    )
    print(f"{'mode':58} {'p50 ms':>8} {'p90 ms':>8} {'x raw p50':>9}")
    for name, samples in rows:
        p50, p90 = percentiles(samples)
        print(f"{name:58} {p50:8.1f} {p90:8.1f} {p50 / raw_p50:9.1f}")
    print(
        f"\nSQL queries per turn (send message + run the turn): SQLite {sqlite_queries}"
        + (f", Postgres {pg_queries}" if pg_queries else "")
    )


if __name__ == "__main__":
    main()
