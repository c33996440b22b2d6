"""Benchmark: N signed-in users' turns against the distributed stack with K worker processes.

The processes docker-compose.yml runs, started directly: one daphne web process
(config.asgi:application) and K turns workers (`celery -A config worker -Q celery
--pool=threads --concurrency=200`, each with its own --hostname), on Postgres and Redis (a
database and a Redis db of their own), with the fake OpenAI-compatible model of
bench/fake_stream.py (every answer streams for `--seconds`). The team of bench/concurrency.py:
the entry agent "lead" asks one expert (depth 1), three model calls a turn. N users, each a
real websocket client with its own session cookie, connect, then all send one message at once;
a turn is timed from its `message.send` to the entry agent's `run.completed` on that socket.

For each K: a warm-up turn and a first burst of the most users (each new thread's first turn:
reported, marked c), a single turn three times one after the other (the baseline), then each N.
Prints K, N, turns/s, p50 and p99 turn time, p99 over the single turn's p50, p99 of send to
`message.created` (the web's part), failures, CPU ms per turn of the web process, the workers,
the Postgres backends of the bench database, Redis (shared with anything else on it), the fake
and this process (the clients), the machine's cores busy over the burst (/proc/stat), the most
streams the fake held at once, the most events waiting in Redis for the web process and the
load average; then each worker's share of the CPU and the first failed turns of each level
(what their socket received, and how their root run ended in the database).

Usage: .venv/bin/python bench/scale_out.py [--workers 1,2,4] [--users 50,200] [--seconds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from concurrency import TEAM, p50, p99
from concurrency_servers import Fake, Worker, cpu_spent
from harness import ROOT, base_env, distributed_env, free_port, manage, shell, wait_for_port
from process_probe import Peaks, cpu_seconds, process_tree

USERS = """
import json
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
keys = []
for i in range(%d):
    user, _ = get_user_model().objects.get_or_create(username=f"scale-{i}")
    s = SessionStore(); s["_auth_user_id"] = str(user.pk)
    s["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    s["_auth_user_hash"] = user.get_session_auth_hash(); s.create(); keys.append(s.session_key)
print(json.dumps(keys))
"""
SINGLE_TURNS = 3  # the baseline: this many single turns, one after the other
LOGS = Path(tempfile.gettempdir())
ROLES = ("web", "workers", "postgres", "redis", "fake", "bench")
TROUBLE = re.compile(r"Traceback|WARNING|ERROR|CRITICAL|Exception")


@dataclass
class Turn:
    """One user's turn, times by time.perf_counter() in this process."""

    session_id: str = ""
    started: float = 0.0
    acked: float | None = None  # message.created arrived
    ended: float | None = None  # the entry agent's run.completed arrived
    status: str = ""  # run.completed's status, or what went wrong
    events: int = 0  # events received
    last: str = ""  # the last event's type and agent depth


@dataclass
class Level:
    """N users' turns on K workers, and what the processes spent on them."""

    workers: int
    users: int
    label: str  # "1" for the single turn, "200c" for the first burst
    turns: list[Turn]
    cpu: dict[str, float]  # seconds, by role and by worker ("worker-1", …)
    cores: float  # machine-wide cores busy over the level
    streams: int
    queue: int  # most events waiting in Redis for the web process at once
    load: float

    @property
    def times(self) -> list[float]:
        """Send → root run.completed of each turn that succeeded, in seconds."""
        return [t.ended - t.started for t in self.turns if t.ended and t.status == "succeeded"]

    @property
    def acks(self) -> list[float]:
        """Send → message.created of each turn acknowledged, in seconds."""
        return [t.acked - t.started for t in self.turns if t.acked]

    @property
    def failed(self) -> int:
        """Turns that did not end with a succeeded root run.completed."""
        return len(self.turns) - len(self.times)

    @property
    def rate(self) -> float:
        """Turns per second, from the first send to the last end (the single turn: summed)."""
        ended = [t for t in self.turns if t.ended]
        if not ended:
            return 0.0
        if self.label == "1":
            return len(ended) / sum(t.ended - t.started for t in ended)
        return len(ended) / (max(t.ended for t in ended) - min(t.started for t in self.turns))


class Web:
    """The daphne process compose's `web` service runs, logging to a file, for a `with` block."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log, self.port = env, log, free_port()

    def __enter__(self) -> Web:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        command += ["--websocket-max-message-size", "4194304"]
        command += ["--websocket-max-frame-size", "4194304", "config.asgi:application"]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            wait_for_port(self.port, timeout=60)
        except RuntimeError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:  # daphne can wait on an open websocket
            self.process.kill()
            self.process.wait()


class Stack:
    """The running processes of one K: where each role's CPU goes."""

    def __init__(self, web: Web, workers: list[Worker], fake: Fake) -> None:
        import redis
        from django.conf import settings

        self.web, self.workers, self.fake = web, workers, fake
        self.redis = redis.Redis.from_url(settings.REDIS_URL)

    def web_queue(self) -> int:
        """Events waiting in Redis for the web process: one channel-layer queue holds all its
        sockets' events (channels_redis drops a group send to a queue at its capacity)."""
        keys = self.redis.scan_iter(match="asgi*specific.*!", count=10_000)
        return max((int(self.redis.zcard(key)) for key in keys), default=0)

    def pids(self) -> dict[str, list[int]]:
        """Each role's processes now (Postgres: the backends on the bench database)."""
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            backends = [row[0] for row in cursor.fetchall()]
        connection.close()
        redis_pid = int(self.redis.info("server")["process_id"])
        found = {
            "web": process_tree(self.web.process.pid),
            "postgres": backends,
            "redis": [redis_pid],
            "fake": [self.fake.process.pid],
            "bench": [os.getpid()],
        }
        for number, worker in enumerate(self.workers, 1):
            found[f"worker-{number}"] = process_tree(worker.process.pid)
        return found

    def cpu(self) -> dict[str, dict[int, float]]:
        """Each role's processes' CPU seconds so far."""
        return {role: cpu_seconds(pids) for role, pids in self.pids().items()}


def machine_busy() -> tuple[float, float]:
    """Busy and total CPU time of the whole machine so far (/proc/stat, in ticks)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split()[1:9]]
    return sum(fields) - fields[3] - fields[4], sum(fields)  # minus idle and iowait


async def connect(port: int, session_key: str) -> object:
    """A signed-in websocket to the chat, as the page opens it."""
    import websockets

    headers = {"Cookie": f"sessionid={session_key}", "Origin": f"http://127.0.0.1:{port}"}
    return await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/",
        additional_headers=headers,
        max_size=None,
        open_timeout=60,
    )


async def one_turn(ws: object, go: asyncio.Event, timeout: float) -> Turn:
    """Wait for `go`, send one message in a new session and read events until the entry
    agent's run.completed, a refusal, a closed socket or `timeout` s."""
    import websockets

    turn = Turn(str(uuid.uuid4()))
    frame = {"type": "message.send", "session_id": turn.session_id}
    frame.update(message_id=str(uuid.uuid4()), text="go")
    await go.wait()
    turn.started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            await ws.send(json.dumps(frame))  # type: ignore[attr-defined]
            while True:
                event = json.loads(await ws.recv())  # type: ignore[attr-defined]
                turn.events += 1
                turn.last = f"{event['type']}@{(event.get('agent') or {}).get('depth')}"
                if event["type"] == "message.created":
                    turn.acked = time.perf_counter()
                elif event["type"] == "error" and not event.get("run_id"):
                    turn.status = f"refused: {event['data'].get('code')}"
                    return turn
                elif event["type"] == "run.completed" and event["agent"]["depth"] == 0:
                    turn.ended, turn.status = time.perf_counter(), event["data"]["status"]
                    return turn
    except TimeoutError:
        turn.status = "timeout"
    except websockets.ConnectionClosed as exc:
        turn.status = f"closed: {exc}"
    return turn


async def burst(
    port: int, keys: list[str], timeout: float, measure: Callable[[], None]
) -> list[Turn]:
    """Connect one socket per session key, then send a message on all of them at once;
    `measure()` is called (in a thread) just before the sends and after the last end."""
    opened = await asyncio.gather(*(connect(port, key) for key in keys), return_exceptions=True)
    sockets = [ws for ws in opened if not isinstance(ws, BaseException)]
    refused = [Turn(status=f"connect: {ws!r}") for ws in opened if isinstance(ws, BaseException)]
    try:
        go = asyncio.Event()
        tasks = [asyncio.create_task(one_turn(ws, go, timeout)) for ws in sockets]
        await asyncio.to_thread(measure)
        go.set()
        turns = await asyncio.gather(*tasks)
        await asyncio.to_thread(measure)
    finally:
        closing = (asyncio.wait_for(ws.close(), 10) for ws in sockets)  # type: ignore[attr-defined]
        await asyncio.gather(*closing, return_exceptions=True)
    return [*turns, *refused]


def run_level(stack: Stack, keys: list[str], label: str, timeout: float) -> Level:
    """Run one level (the single turn: SINGLE_TURNS bursts of one) and read what it cost."""
    readings: list[tuple[dict[str, dict[int, float]], tuple[float, float]]] = []

    def measure() -> None:
        readings.append((stack.cpu(), machine_busy()))

    print(f"  K={len(stack.workers)}: {label} users", flush=True)
    stack.fake.streams(reset=True)
    rounds = SINGLE_TURNS if label == "1" else 1
    with Peaks(stack.web.process.pid, stack.web_queue, interval=0.5) as peaks:
        turns = [
            turn
            for _ in range(rounds)
            for turn in asyncio.run(burst(stack.web.port, keys, timeout, measure))
        ]
    (first, busy_from), (last, busy_to) = readings[0], readings[-1]
    spent = cpu_spent(first, last)
    spent["workers"] = sum(v for role, v in spent.items() if role.startswith("worker-"))
    cores = (busy_to[0] - busy_from[0]) / (busy_to[1] - busy_from[1]) * (os.cpu_count() or 1)
    return Level(
        len(stack.workers),
        len(keys),
        label,
        turns,
        spent,
        cores,
        stack.fake.streams(),
        peaks.extra_peak,
        os.getloadavg()[0],
    )


def run_workers(
    count: int, users: list[int], keys: list[str], env: dict[str, str], fake: Fake, seconds: float
) -> list[Level]:
    """Start the web and `count` workers, warm them, run the single turn and each N."""
    with ExitStack() as stack:
        web = stack.enter_context(Web(env, LOGS / "bench-scale-out-web.log"))
        workers = []
        for _ in range(count):
            worker = Worker(env, "threads", 200, LOGS / "bench-scale-out-workers.log")
            try:
                workers.append(stack.enter_context(worker))
            except BaseException:
                if hasattr(worker, "process"):  # started, never answered the ping
                    worker.process.kill()
                    worker.process.wait()
                raise
        processes = Stack(web, workers, fake)
        timeout = 120 + 9 * seconds * math.ceil(max(users) / (200 * count))
        run_level(processes, keys[:1], "warm-up", timeout)  # imports, connections
        levels = [run_level(processes, keys[: max(users)], f"{max(users)}c", timeout)]
        levels.append(run_level(processes, keys[:1], "1", timeout))
        levels += [run_level(processes, keys[:n], str(n), timeout) for n in users]
    return levels


def failures(turns: list[Turn]) -> str:
    """How the first failed turns went: at the client, and their root run in the database."""
    from delegation.models import Run

    lines = []
    for turn in turns[:5]:
        runs = Run.objects.filter(session_id=turn.session_id, parent__isnull=True)
        root = runs.values("status", "worker", "created_at", "finished_at").first() or {}
        took = root and root["finished_at"] and root["finished_at"] - root["created_at"]
        lines.append(
            f"\n  {turn.session_id}: {turn.status}, acked {turn.acked is not None}, "
            f"{turn.events} events, last {turn.last}; root run {root.get('status')} on "
            f"{root.get('worker')} in {took}"
        )
    return "".join(lines)


def capacity() -> int:
    """The channel layer's capacity: events a queue holds before group sends to it drop."""
    from django.conf import settings

    return settings.CHANNEL_LAYERS["default"]["CONFIG"].get("capacity", 100)


def report(levels: list[Level]) -> None:
    """The table, each worker's share of the CPU, and the turns that failed."""
    head = f"{'K':>2} {'N':>5} {'turns/s':>7} {'p50 s':>6} {'p99 s':>6} {'p99/1':>5} "
    head += f"{'ack99':>5} {'fail':>4} " + " ".join(f"{role[:7]:>7}" for role in ROLES)
    print("\n" + head + f" {'cores':>5} {'streams':>7} {'queue':>5} {'load1':>5}")
    single = {lv.workers: p50(lv.times) for lv in levels if lv.label == "1"}
    for lv in levels:
        ratio = p99(lv.times) / single[lv.workers] if single.get(lv.workers) else math.nan
        cpu = " ".join(f"{lv.cpu.get(role, 0.0) * 1000 / len(lv.turns):7.1f}" for role in ROLES)
        print(
            f"{lv.workers:>2} {lv.label:>5} {lv.rate:7.2f} {p50(lv.times):6.2f} "
            f"{p99(lv.times):6.2f} {ratio:5.2f} {p99(lv.acks):5.2f} {lv.failed:4d} {cpu} "
            f"{lv.cores:5.2f} {lv.streams:7d} {lv.queue:5d} {lv.load:5.2f}"
        )
    print(
        "N: users sending at once (1: one at a time, three turns; c: the workers' first burst)\n"
        "p50, p99: send to the root's run.completed; p99/1: p99 over the single turn's p50;\n"
        "ack99: p99 of send to message.created; web…bench: CPU ms per turn (postgres: backends"
        "\non the bench database; bench: this process, the websocket clients); cores: machine-"
        "wide\ncores busy over the level; streams: most the fake held at once; queue: most events"
        f" waiting\nin Redis for the web process (capacity {capacity()}); load1: at the end"
    )
    print("\nEach worker's CPU, ms per turn:")
    for lv in levels:
        shares = sorted(role for role in lv.cpu if role.startswith("worker-"))
        spent = " ".join(f"{lv.cpu[role] * 1000 / len(lv.turns):7.1f}" for role in shares)
        print(f"{lv.workers:>2} {lv.label:>5} {spent}")
    for lv in levels:
        bad = [t for t in lv.turns if t.status != "succeeded"]
        if bad:
            print(f"K={lv.workers} N={lv.label}: {len(bad)} failed: {failures(bad)}")
    for log in LOGS.glob("bench-scale-out-*.log"):
        text = log.read_text(errors="replace")
        lines = [line for line in text.splitlines() if TROUBLE.search(line)]
        print(f"{log}: {len(lines)} error lines" + "".join(f"\n  {line}" for line in lines[:8]))


def main() -> None:
    """Start the fake model, set up the database and users, run each K, print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--users", default="50,200")
    parser.add_argument("--seconds", type=float, default=2.0, help="each model answer's length")
    parser.add_argument(
        "--redis-db", type=int, default=11, help="a Redis database nothing else uses"
    )
    options = parser.parse_args()
    users = [int(n) for n in options.users.split(",")]

    for log in LOGS.glob("bench-scale-out-*.log"):
        log.write_bytes(b"")
    with Fake(options.seconds) as fake:
        env = distributed_env(
            base_env(f"http://127.0.0.1:{fake.port}/v1"),
            database="agent_platform_bench_scale_out",
            redis_db=options.redis_db,
        )
        env["DJANGO_SETTINGS_MODULE"] = "config.settings"
        manage(env, "migrate", "--no-input")
        shell(env, TEAM)
        keys = json.loads(shell(env, USERS % max(users)))
        os.environ.update(env)
        import django

        django.setup()
        levels = []
        for count in (int(k) for k in options.workers.split(",")):
            print(f"K={count} workers (logs: {LOGS}/bench-scale-out-*.log)", flush=True)
            levels += run_workers(count, users, keys, env, fake, options.seconds)
    report(levels)


if __name__ == "__main__":
    main()
