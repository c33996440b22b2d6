"""Shared bench machinery: real servers (daphne, Celery workers), a websocket client, the raw
`openai` client as the floor, and SQL query counts."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p90 in milliseconds."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return statistics.median(ordered) * 1000, p90 * 1000


def raw_calls(base_url: str, calls: int, turns: int) -> list[float]:
    """`calls` sequential streamed completions per turn with the bare client, no persistence."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    samples = []
    for _ in range(turns):
        started = time.perf_counter()
        messages = [{"role": "system", "content": "raw"}, {"role": "user", "content": "go"}]
        for _call in range(calls):
            for _chunk in client.chat.completions.create(
                model="m", messages=messages, tools=tools, stream=True
            ):
                pass
        samples.append(time.perf_counter() - started)
    return samples


def base_env(fake_base_url: str) -> dict[str, str]:
    """The environment every server process of a bench gets."""
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake_base_url,
        "OPENAI_API_KEY": "x",
        # Production settings: DEBUG's SQL capture would be measured too.
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "bench-only-secret-key",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "API_THROTTLE_SEND": "100000/minute",  # one bench user sends hundreds of turns
        "DJANGO_LOG_LEVEL": "WARNING",
        "OPENAI_MAX_RETRIES": "0",
    }
    env.pop("REDIS_URL", None)
    return env


def distributed_env(
    env: dict[str, str], database: str = "agent_platform_bench", redis_db: int = 14
) -> dict[str, str]:
    """The environment of the distributed mode: its own Postgres database (created if missing)
    and Redis db (a bench that may run beside the others names its own)."""
    pg = os.environ.get("PG_URL", "postgres://postgres@127.0.0.1:5432/agent_platform")
    subprocess.run(
        ["createdb", "-h", "127.0.0.1", "-U", "postgres", database],
        capture_output=True,
    )
    redis_url = f"redis://127.0.0.1:6379/{redis_db}"
    import redis

    redis.Redis.from_url(redis_url).flushdb()  # no task or event left from an earlier bench
    return {
        **env,
        "DATABASE_URL": pg.rsplit("/", 1)[0] + "/" + database,
        "REDIS_URL": redis_url,
    }


def database_ensure(pg_url: str) -> None:
    """Create the Postgres database of `pg_url` when it does not exist."""
    import environ
    import psycopg

    config = environ.Env.db_url_config(pg_url)
    with psycopg.connect(
        host=config["HOST"],
        port=config["PORT"] or 5432,
        user=config["USER"],
        dbname="postgres",
        autocommit=True,
    ) as admin:
        exists = "SELECT 1 FROM pg_database WHERE datname = %s"
        if not admin.execute(exists, [config["NAME"]]).fetchone():
            admin.execute(f'CREATE DATABASE "{config["NAME"]}"')


def manage(env: dict[str, str], *args: str) -> str:
    """Run a management command; its stdout."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def shell(env: dict[str, str], code: str) -> str:
    """Run Python in `manage.py shell`; its last line of output."""
    return manage(env, "shell", "-v", "0", "-c", code).strip().splitlines()[-1]


SESSION = """
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
user, _ = get_user_model().objects.get_or_create(username="bench")
s = SessionStore(); s["_auth_user_id"] = str(user.pk)
s["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
s["_auth_user_hash"] = user.get_session_auth_hash(); s.create(); print(s.session_key)
"""


def free_port() -> int:
    """An unused TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30) -> None:
    """Block until something listens on the port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on {port} did not start")


def asgi_server_command(port: int) -> list[str]:
    """The ASGI server the benches run: daphne (the default), or uvicorn with
    BENCH_ASGI_SERVER=uvicorn, to compare the two (`.venv/bin/pip install uvicorn` first: it is
    not a dependency; docs/decisions/0006-performance.md has the comparison)."""
    if os.environ.get("BENCH_ASGI_SERVER") == "uvicorn":
        return [
            sys.executable,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--port",
            str(port),
            "--lifespan",
            "off",
            "--log-level",
            "warning",
            "--ws-ping-interval",
            "0",
        ]
    return [sys.executable, "-m", "daphne", "-p", str(port), "config.asgi:application"]


class Servers:
    """daphne (and, distributed, a Celery worker) for the duration of a `with` block."""

    def __init__(self, env: dict[str, str], with_worker: bool) -> None:
        self.env, self.with_worker, self.port = env, with_worker, free_port()
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> Servers:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.processes.append(
            subprocess.Popen(
                asgi_server_command(self.port),
                cwd=ROOT,
                env=self.env,
                **quiet,
            )
        )
        if self.with_worker:
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        f"--concurrency={os.environ.get('BENCH_WORKER_CONCURRENCY', '2')}",
                        f"--pool={os.environ.get('BENCH_WORKER_POOL', 'prefork')}",
                        "--without-mingle",
                        "--without-gossip",
                        "--loglevel=WARNING",
                    ],
                    cwd=ROOT,
                    env=self.env,
                    **quiet,
                )
            )
        wait_for_port(self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        # Every process is stopped, whatever one of them does: a worker left running would
        # take the next bench's tasks from the same queue and fail them against a dead model.
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:  # daphne can wait on an open websocket
                process.kill()
                process.wait()


async def websocket_turns(
    port: int, session_key: str, texts: list[str], done: Callable[[dict], bool]
) -> list[float]:
    """Time message.send → the event `done` accepts, at a websocket client receiving every
    event; one fresh chat session per turn."""
    import websockets

    headers = {"Cookie": f"sessionid={session_key}", "Origin": f"http://127.0.0.1:{port}"}
    samples = []
    url = f"ws://127.0.0.1:{port}/ws/chat/"
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        for text in texts:
            frame = {
                "type": "message.send",
                "session_id": str(uuid.uuid4()),
                "message_id": str(uuid.uuid4()),
                "text": text,
            }
            started = time.perf_counter()
            await ws.send(json.dumps(frame))
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if event["type"] == "error" and not event.get("run_id"):
                    raise RuntimeError(event)
                if done(event):
                    break
            samples.append(time.perf_counter() - started)
    return samples


def root_completed(event: dict) -> bool:
    """The turn's end: the entry agent's run.completed. A turn that did not succeed stops the
    bench (a failed turn ends fast, and would pass for a fast one)."""
    if event["type"] != "run.completed" or event["agent"]["depth"] != 0:
        return False
    if event["data"].get("status") != "succeeded":
        raise RuntimeError(f"a bench turn did not succeed: {event['data']}")
    return True


QUERIES = """
import uuid
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.contrib.auth import get_user_model
from delegation.turns import turn_start
user = get_user_model().objects.get(username="bench")
with CaptureQueriesContext(connection) as turn:
    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=%r)
print(len(turn.captured_queries))
"""


def queries_per_turn(env: dict[str, str], text: str) -> int:
    """SQL queries of one whole turn, run synchronously in one thread so every query counts."""
    sync = {**env, "TASKS_RUN_SYNC": "1", "CELERY_BROKER_URL": ""}
    sync.pop("REDIS_URL", None)
    return int(shell(sync, QUERIES % text))
