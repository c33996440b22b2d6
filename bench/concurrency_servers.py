"""The processes bench/concurrency.py runs and measures: one Celery worker, the fake model, and
the processes a turn spends CPU in (by /proc and pg_stat_activity)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

from harness import ROOT, free_port, wait_for_port
from process_probe import cpu_seconds, process_tree

APP_NAME = "bench-concurrency-worker"  # the worker's Postgres sessions, counted by name


class Worker:
    """One `celery worker` process (and its pool's children) for a `with` block."""

    def __init__(self, env: dict[str, str], pool: str, concurrency: int, log: Path) -> None:
        self.env = {**env, "PGAPPNAME": APP_NAME}
        self.pool, self.concurrency, self.log = pool, concurrency, log
        self.name = f"bench-{pool}-{uuid.uuid4().hex[:6]}"
        self.label = f"{pool} x{concurrency}"

    def __enter__(self) -> Worker:
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "celery"]
        command += [f"--pool={self.pool}", f"--concurrency={self.concurrency}"]
        command += ["--without-mingle", "--without-gossip", "--loglevel=WARNING"]
        command += [f"--hostname={self.name}@%h"]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        from config.celery_app import app

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            if any(self.name in host for reply in app.control.ping(timeout=0.5) for host in reply):
                return self
        raise RuntimeError(f"the worker did not start; see {self.log}")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def worker_connections() -> int:
    """The worker's Postgres sessions now (by its application name)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]
        )
        count = cursor.fetchone()[0]
    connection.close()
    return count


class Fake:
    """The fake model's process (bench/fake_stream.py) for a `with` block."""

    def __init__(self, seconds: float) -> None:
        self.port, self.seconds = free_port(), seconds

    def __enter__(self) -> Fake:
        command = [sys.executable, str(ROOT / "bench" / "fake_stream.py")]
        command += ["--port", str(self.port), "--seconds", str(self.seconds)]
        self.process = subprocess.Popen(command)
        wait_for_port(self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait()

    def streams(self, reset: bool = False) -> int:
        """The most streams it held at once (since the last reset)."""
        url = f"http://127.0.0.1:{self.port}/stats" + ("?reset" if reset else "")
        return json.load(urllib.request.urlopen(url, timeout=5))["max_active"]


CPU_OF = ("worker", "postgres", "redis", "bench", "fake")


def processes(worker: Worker, fake: Fake) -> dict[str, list[int]]:
    """The processes a turn spends CPU in, by role: the worker (and its pool's children), the
    Postgres backends on the bench database, the Redis server (shared with whatever else uses
    it), this process (turn starts, the listener) and the fake model."""
    import redis
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        backends = [row[0] for row in cursor.fetchall()]
    connection.close()
    redis_pid = redis.Redis.from_url(settings.REDIS_URL).info("server")["process_id"]
    return {
        "worker": process_tree(worker.process.pid),
        "postgres": backends,
        "redis": [int(redis_pid)],
        "bench": [os.getpid()],
        "fake": [fake.process.pid],
    }


def cpu_spent(
    before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]
) -> dict[str, float]:
    """CPU seconds per role between two readings (a process new since the first counts whole)."""
    return {
        role: sum(spent - before.get(role, {}).get(pid, 0.0) for pid, spent in after[role].items())
        for role in after
    }


def cpu_now(worker: Worker, fake: Fake) -> dict[str, dict[int, float]]:
    """Each role's processes' CPU seconds so far."""
    return {role: cpu_seconds(pids) for role, pids in processes(worker, fake).items()}
