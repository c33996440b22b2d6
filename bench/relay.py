"""Benchmark: relaying streamed tokens to websocket clients (embedded: daphne, in-process pool,
SQLite, in-memory layer; `--distributed` adds daphne + Celery worker + Postgres + Redis).

Three figures, each against the real server at real websocket clients:

1. throughput: one answer of 4,000 one-word chunks from a zero-latency fake model; tokens per
   second at the client, and per second of the server's CPU (all its processes: tokens/s per
   core), with how many `message.delta` events carried them (deltas are coalesced);
2. lag under load: 100 users stream at once (50 chunks each, 20 ms apart, every chunk stamped
   with the time the fake model sent it); lag = arrival at the client - that stamp, p50/p99;
3. idle sockets: 1,000 open websockets with nothing to say; the server's CPU over 20 s, as a
   share of one core.

Usage: .venv/bin/python bench/relay.py [--sessions 100] [--idle 1000] [--distributed]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from harness import Servers, base_env, distributed_env, manage, shell

from tests.fake_openai import FakeOpenAI, Reply

STAMP = re.compile(r"@(\d+\.\d+) ")
TICKS = os.sysconf("SC_CLK_TCK")

AGENT = """
from agents.models import Agent
from agents.services import agent_revision_record
Agent.objects.filter(is_entry=True).update(is_entry=False)
agent, _ = Agent.objects.update_or_create(name="relay", defaults=dict(
    display_name="Relay", provider="openai", model="m", tool_keys=[], is_entry=True,
    system_prompt="relay"))
agent_revision_record(agent=agent)
print("ok")
"""

USERS = """
import json
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
keys = []
for n in range(%d):
    user, _ = get_user_model().objects.get_or_create(username=f"relay{n}")
    s = SessionStore(); s["_auth_user_id"] = str(user.pk)
    s["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    s["_auth_user_hash"] = user.get_session_auth_hash(); s.create(); keys.append(s.session_key)
print(json.dumps(keys))
"""


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes and their children so far."""
    total = 0
    for pid in pids:
        for task in _tree(pid):
            try:
                fields = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def _tree(pid: int) -> list[int]:
    """The process and its descendants (a Celery worker's pool processes)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except FileNotFoundError:
            children = []
        todo += [int(c) for c in children]
    return out


async def connect(port: int, key: str):  # noqa: ANN201  (a websockets connection)
    """A signed-in websocket."""
    import websockets

    headers = {"Cookie": f"sessionid={key}", "Origin": f"http://127.0.0.1:{port}"}
    return await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/", additional_headers=headers, max_size=None
    )


async def one_turn(ws, on_delta=None) -> tuple[int, float, float]:  # noqa: ANN001
    """Send a message and read until the turn ends: (deltas, first delta time, end time)."""
    frame = {
        "type": "message.send",
        "session_id": str(uuid.uuid4()),
        "message_id": str(uuid.uuid4()),
        "text": "stream please",
    }
    await ws.send(json.dumps(frame))
    deltas, first = 0, 0.0
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), 120))
        now = time.time()
        if event["type"] == "error" and not event.get("run_id"):
            raise RuntimeError(event)
        if event["type"] == "message.delta":
            deltas += 1
            first = first or now
            if on_delta:
                on_delta(event["data"]["text"], now)
        if event["type"] == "run.completed" and event["agent"]["depth"] == 0:
            return deltas, first, now


async def throughput(port: int, key: str, pids: list[int], tokens: int) -> dict[str, float]:
    """Tokens/s of one long answer at the client and per server CPU second."""
    ws = await connect(port, key)
    await one_turn(ws)  # warm up
    cpu = cpu_seconds(pids)
    deltas, first, end = await one_turn(ws)
    used = cpu_seconds(pids) - cpu
    await ws.close()
    return {
        "tokens": tokens,
        "deltas": deltas,
        "wall_tokens_per_s": tokens / (end - first),
        "tokens_per_cpu_s": tokens / used if used else float("inf"),
    }


async def lag(port: int, keys: list[str]) -> dict[str, float]:
    """Every delta's lag (arrival - its oldest token's send stamp) with all users at once."""
    sockets = [await connect(port, key) for key in keys]
    lags: list[float] = []

    def record(text: str, now: float) -> None:
        stamps = [float(s) for s in STAMP.findall(text)]
        if stamps:
            lags.append(now - min(stamps))

    started = time.perf_counter()
    await asyncio.gather(*(one_turn(ws, record) for ws in sockets))
    wall = time.perf_counter() - started
    for ws in sockets:
        await ws.close()
    ordered = sorted(lags)
    return {
        "sessions": len(keys),
        "deltas": len(ordered),
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "wall_s": wall,
    }


async def idle(port: int, key: str, pids: list[int], count: int, seconds: float) -> float:
    """The server's CPU share of one core while `count` sockets stay open and silent."""
    sockets = []
    for start in range(0, count, 100):
        sockets += await asyncio.gather(
            *(connect(port, key) for _ in range(start, min(count, start + 100)))
        )
    await asyncio.sleep(3)
    cpu, wall = cpu_seconds(pids), time.perf_counter()
    await asyncio.sleep(seconds)
    share = (cpu_seconds(pids) - cpu) / (time.perf_counter() - wall)
    await asyncio.gather(*(ws.close() for ws in sockets))
    return share


def main() -> None:
    """Run the three measurements and print them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--distributed", action="store_true")
    options = parser.parse_args()

    fake = FakeOpenAI().start()
    words = [f"w{i} " for i in range(options.tokens)]
    fake.fallback = lambda body: (
        Reply(text_chunks=[f"w{i} " for i in range(50)], chunk_interval=0.02, stamped=True)
        if fake.mode == "lag"
        else Reply(text_chunks=words)
    )
    fake.mode = "throughput"
    env = {**base_env(fake.base_url), "INPROCESS_WORKERS": str(options.sessions + 4)}
    with tempfile.TemporaryDirectory() as tmp:
        if options.distributed:
            env = {**distributed_env(env)}
            env["BENCH_WORKER_CONCURRENCY"] = env.get("BENCH_WORKER_CONCURRENCY", "4")
        else:
            env["DATABASE_URL"] = f"sqlite:///{tmp}/relay.sqlite3"
        manage(env, "migrate", "--no-input")
        shell(env, AGENT)
        keys = json.loads(shell(env, USERS % options.sessions))
        with Servers(env, with_worker=options.distributed) as servers:
            pids = [p.pid for p in servers.processes]
            mode = "distributed" if options.distributed else "embedded"
            result = asyncio.run(throughput(servers.port, keys[0], pids, options.tokens))
            fake.mode = "lag"
            lagged = asyncio.run(lag(servers.port, keys))
            share = asyncio.run(idle(servers.port, keys[0], pids, options.idle, 20))
    fake.stop()
    print(f"\nRelay ({mode}; zero-latency fake model for throughput)")
    print(
        f"  throughput: {result['tokens']} tokens in {result['deltas']} deltas; "
        f"{result['wall_tokens_per_s']:,.0f} tokens/s at the client, "
        f"{result['tokens_per_cpu_s']:,.0f} tokens per server CPU second"
    )
    print(
        f"  lag: {lagged['sessions']} sessions streaming at once, {lagged['deltas']} deltas: "
        f"p50 {lagged['p50_ms']:.1f} ms, p99 {lagged['p99_ms']:.1f} ms "
        f"(all done in {lagged['wall_s']:.1f} s)"
    )
    print(f"  idle: {options.idle} open sockets cost {share * 100:.1f} % of one core")
    print(f"\n{mode}_relay_tokens_per_cpu_s={result['tokens_per_cpu_s']:.0f}")
    print(f"{mode}_relay_lag_p99_ms={lagged['p99_ms']:.1f}")
    print(f"{mode}_idle_sockets_core_share={share:.3f}")


if __name__ == "__main__":
    main()
