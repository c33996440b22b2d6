"""Benchmark: this platform beside its peers, on the same team and the same fake model, in one run.

The team is entry → hop1 → hop2; a turn at depth d delegates d levels down and makes 2d + 1
streamed model calls (every answer 20 chunks, zero-latency fake server). Four ways run it:

- raw: the bare `openai` client making the same calls, nothing persisted (the floor);
- sdk: the OpenAI Agents SDK, `as_tool` sub-agents, streamed, nothing persisted, in its own
  process (bench/peer_sdk.py, from the optional `bench` extra in .venv-bench: `make bench-peers`);
- embedded: this platform on daphne, SQLite, in-process pool, in-memory layer;
- make-run: the same behind the door a newcomer uses, `make run`'s server (`manage.py
  runserver`, DEBUG on, the autoreloader watching);
- distributed: daphne + a Celery worker, Postgres, Redis;
- openai-door: the embedded server again, through its OpenAI-compatible API
  (`/api/openai/v1/chat/completions`, streamed) with the official `openai` client, as Open
  WebUI or LibreChat would use it.

Both platform modes are timed at a real websocket client (message.send → the entry agent's
run.completed, every event received) with everything persisted. Turns are interleaved (one of
each way per round, per depth) so drift hits all alike. Prints p50/p90 per depth and way, each
one's ratio to raw and to the SDK, the per-hop overhead, SQL queries per turn, and
machine-readable `key=value` lines. A second part paces the answers (a chunk every 20 ms, as a
model that takes its time) and prints the time to the first word the user sees, beside the raw
client's.

The SDK peer runs from .venv-bench (`make bench-peers`) or, when the `bench` extra is installed
into this venv, from here with site-packages added by hand (the SDK's package is named `agents`,
like our app). Without it the bench fails, unless `--without-sdk` says to leave it out.

Usage: .venv/bin/python bench/peers.py [--turns 30] [--skip-distributed] [--without-sdk]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid

from harness import (
    ROOT,
    SESSION,
    Servers,
    base_env,
    distributed_env,
    free_port,
    manage,
    percentiles,
    queries_per_turn,
    root_completed,
    shell,
    wait_for_port,
)

from tests.fake_openai import FakeOpenAI, delegate, text, tool_call

ANSWER = [f"word{i} " for i in range(20)]
DEPTHS = (0, 1, 2)
PACED_DEPTHS = (0, 1)
SDK_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
RAW_TOOL = "raw: call the tool"  # the raw client's system prompt for the calls that delegate
PACE = {"chunk_interval": 0.0}  # seconds between answer chunks, for every way alike
PACED_INTERVAL = 0.02
WHO = re.compile(r"You are (\w+)\.")

TEAM = """
from agents.models import Agent
from agents.services import agent_revision_record
Agent.objects.filter(is_entry=True).update(is_entry=False)
def make(name, entry=False):
    agent, _ = Agent.objects.update_or_create(name=name, defaults=dict(
        display_name=name, provider="openai", model="m", system_prompt=f"You are {name}.",
        is_entry=entry, tool_keys=[]))
    return agent
entry, hop1, hop2 = make("entry", True), make("hop1"), make("hop2")
entry.allowed_subagents.set([hop1]); hop1.allowed_subagents.set([hop2])
for a in (entry, hop1, hop2): agent_revision_record(agent=a)
print("ok")
"""


def fake_team(body: dict) -> object:
    """Delegate one level down while the requested depth allows it, else answer: with the
    platform's `delegate` tool, or the SDK's agent-as-tool named after the sub-agent (the raw
    client asks for a tool call in so many words)."""
    if body["messages"][0].get("content") == RAW_TOOL:
        return tool_call("t", {"input": "go"})
    who = WHO.match(body["messages"][0].get("content") or "")
    level = {"entry": 0, "hop1": 1, "hop2": 2}.get(who.group(1)) if who else None
    last = body["messages"][-1]
    if last["role"] == "user" and level is not None:
        depth = int(last["content"].split("depth=")[1][0])
        if depth > level:
            target = f"hop{level + 1}"
            tools = {t["function"]["name"] for t in body.get("tools", [])}
            if target in tools:
                return tool_call(target, {"input": last["content"]})
            return delegate(target, last["content"])
    answer = text(*ANSWER)
    answer.chunk_interval = PACE["chunk_interval"]
    return answer


def sdk_command(base_url: str) -> list[str] | None:
    """How to start the SDK peer: from .venv-bench, or from this interpreter when the SDK is
    installed here (no site processing, so our editable `agents` is not on the path); None when
    it is nowhere."""
    script = str(ROOT / "bench" / "peer_sdk.py")
    if SDK_PYTHON.exists():
        return [str(SDK_PYTHON), "-P", script, base_url]
    try:
        importlib.metadata.distribution("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        return None
    return [sys.executable, "-S", "-P", script, base_url, sysconfig.get_paths()["purelib"]]


class Raw:
    """The bare client: 2d + 1 streamed calls per turn."""

    name = "raw"

    def __init__(self, base_url: str) -> None:
        import openai

        self.client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
        self.tools = [
            {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
        ]

    async def turn(self, depth: int) -> tuple[float, float]:
        """Seconds of the turn, and to the first text of its call d + 1 (the one the platform
        answers in: the d calls before it delegate)."""
        started = time.perf_counter()
        first = None
        for call in range(2 * depth + 1):
            system = RAW_TOOL if call < depth else "raw"
            messages = [{"role": "system", "content": system}, {"role": "user", "content": "go"}]
            for chunk in self.client.chat.completions.create(
                model="m", messages=messages, tools=self.tools, stream=True
            ):
                if first is None and call == depth and chunk.choices[0].delta.content:
                    first = time.perf_counter()
        ended = time.perf_counter()
        return ended - started, (first or ended) - started


class Sdk:
    """The Agents SDK in its own process, one turn per line."""

    name = "sdk"

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=tempfile.gettempdir(),  # never our `agents` package on the path
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )

    async def turn(self, depth: int) -> tuple[float, float]:
        self.process.stdin.write(f"{depth}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the SDK peer exited; run it by hand to see why")
        seconds, first = line.split()
        return float(seconds), float(first)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


class OpenAiDoor:
    """The embedded server's OpenAI-compatible API, streamed, at the official client: a new
    session per turn (no session header), the answer's chunks until the stream ends."""

    name = "openai-door"

    def __init__(self, port: int, key: str) -> None:
        import openai

        base_url = f"http://127.0.0.1:{port}/api/openai/v1"
        self.client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=30)

    async def turn(self, depth: int) -> tuple[float, float]:
        started = time.perf_counter()
        first = None
        stream = self.client.chat.completions.create(
            model="entry",
            messages=[{"role": "user", "content": f"please go depth={depth}"}],
            stream=True,
        )
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
        ended = time.perf_counter()
        return ended - started, (first or ended) - started


class DevServer:
    """`make run`'s server (runserver with DEBUG and its autoreloader) for a `with` block."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.port = {**env, "DJANGO_DEBUG": "true"}, free_port()
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> DevServer:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # the reloader's child goes with it
        )
        wait_for_port(self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        os.killpg(self.process.pid, 15)
        self.process.wait(timeout=10)


class Platform:
    """One of our modes, at a websocket client on one open connection."""

    def __init__(self, name: str, port: int, session_key: str) -> None:
        self.name, self.port, self.session_key = name, port, session_key
        self.ws = None

    async def open(self) -> None:
        import websockets

        headers = {
            "Cookie": f"sessionid={self.session_key}",
            "Origin": f"http://127.0.0.1:{self.port}",
        }
        self.ws = await websockets.connect(
            f"ws://127.0.0.1:{self.port}/ws/chat/", additional_headers=headers, max_size=None
        )

    async def turn(self, depth: int) -> tuple[float, float]:
        frame = {
            "type": "message.send",
            "session_id": str(uuid.uuid4()),
            "message_id": str(uuid.uuid4()),
            "text": f"please go depth={depth}",
        }
        started = time.perf_counter()
        first = None
        await self.ws.send(json.dumps(frame))
        while True:
            event = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if event["type"] == "error" and not event.get("run_id"):
                raise RuntimeError(event)
            if event["type"] == "run.failed":
                raise RuntimeError(event)
            if first is None and event["type"] == "message.delta":
                first = time.perf_counter()
            if root_completed(event):
                ended = time.perf_counter()
                return ended - started, (first or ended) - started


TOKEN = """
from django.contrib.auth import get_user_model
from chat.tokens import token_create
print(token_create(user=get_user_model().objects.get(username="bench"), name="bench")[1])
"""


def prepared(env: dict[str, str]) -> str:
    """Migrate, write the team and a signed-in user; the session key."""
    manage(env, "migrate", "--no-input")
    shell(env, TEAM)
    return shell(env, SESSION)


async def interleaved(
    ways: list, turns: int, warmup: int, depths: tuple[int, ...] = DEPTHS, first: bool = False
) -> dict[str, dict[int, list[float]]]:
    """Rounds of one turn per way per depth; warm-up rounds are dropped. The turns' seconds, or
    with `first` the seconds to their first text."""
    samples = {way.name: {d: [] for d in depths} for way in ways}
    for round_ in range(warmup + turns):
        for depth in depths:
            for way in ways:
                seconds, to_first = await way.turn(depth)
                if round_ >= warmup:
                    samples[way.name][depth].append(to_first if first else seconds)
    return samples


def hop_samples(samples: dict[int, list[float]], raw: dict[int, list[float]]) -> list[float]:
    """Per round, in ms: (depth-2 turn - depth-0 turn) / 2 minus the raw client's same
    difference."""
    return [
        ((s2 - s0) / 2 - (r2 - r0) / 2) * 1000
        for s0, s2, r0, r2 in zip(samples[0], samples[2], raw[0], raw[2], strict=True)
    ]


def report(samples: dict[str, dict[int, list[float]]], queries: dict[str, dict[int, int]]) -> None:
    """The table and the machine-readable lines."""
    ways = list(samples)
    p50 = {w: {d: percentiles(samples[w][d])[0] for d in DEPTHS} for w in ways}
    print(
        "\nStreamed turn by delegation depth (zero-latency fake model, 20-chunk answers, "
        f"{len(samples['raw'][0])} interleaved turns per cell; ms)"
    )
    print(f"{'way':12} {'depth':>5} {'calls':>5} {'p50':>8} {'p90':>8} {'x raw':>6} {'x sdk':>6}")
    for w in ways:
        for d in DEPTHS:
            median, p90 = percentiles(samples[w][d])
            vs_sdk = f"{median / p50['sdk'][d]:6.2f}" if "sdk" in p50 else "     -"
            print(
                f"{w:12} {d:>5} {2 * d + 1:>5} {median:8.1f} {p90:8.1f} "
                f"{median / p50['raw'][d]:6.2f} {vs_sdk}"
            )
    print("\nPer-hop overhead beyond the raw client's two extra calls (ms):")
    hops = {}
    for w in ways:
        if w == "raw":
            continue
        hop = sorted(hop_samples(samples[w], samples["raw"]))
        hops[w] = hop
        p99 = hop[min(len(hop) - 1, int(len(hop) * 0.99))]
        print(f"  {w:12} p50 {hop[len(hop) // 2]:6.1f}   p99 {p99:6.1f}")
    for w, by_depth in queries.items():
        print(
            f"SQL queries per turn, {w}: " + ", ".join(f"depth {d}: {by_depth[d]}" for d in DEPTHS)
        )
    print()
    for w in ways:
        for d in DEPTHS:
            print(f"{w}_depth{d}_p50_ms={p50[w][d]:.1f}")
            if w not in ("raw", "sdk") and "sdk" in p50:
                print(f"{w}_depth{d}_vs_sdk={p50[w][d] / p50['sdk'][d]:.2f}")
            if w != "raw":
                print(f"{w}_depth{d}_vs_raw={p50[w][d] / p50['raw'][d]:.2f}")
        if w in hops and w != "sdk":
            print(f"{w}_hop_ms={hops[w][len(hops[w]) // 2]:.1f}")


def report_first_text(samples: dict[str, dict[int, list[float]]], interval: float) -> None:
    """Time to the first word with a paced model, beside the raw client's."""
    print(
        f"\nTime to the first word, answers paced at one chunk every {interval * 1000:.0f} ms "
        f"({len(samples['raw'][0])} interleaved turns per cell; ms)"
    )
    print(f"{'way':12} {'depth':>5} {'p50':>8} {'p90':>8} {'- raw p50':>10}")
    for w, by_depth in samples.items():
        for d, values in by_depth.items():
            median, p90 = percentiles(values)
            over = median - percentiles(samples["raw"][d])[0]
            print(f"{w:12} {d:>5} {median:8.1f} {p90:8.1f} {over:10.1f}")
            if w != "raw":
                print(f"{w}_depth{d}_first_text_over_raw_ms={over:.1f}")


def main() -> None:
    """Start every way, run interleaved rounds, print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--skip-distributed", action="store_true")
    parser.add_argument("--without-sdk", action="store_true", help="leave the SDK peer out")
    parser.add_argument("--paced-turns", type=int, default=15)
    options = parser.parse_args()

    fake = FakeOpenAI().start()
    fake.fallback = fake_team
    env = base_env(fake.base_url)
    ways: list = [Raw(fake.base_url)]
    command = None if options.without_sdk else sdk_command(fake.base_url)
    if command is not None:
        ways.append(Sdk(command))
    elif not options.without_sdk:
        fake.stop()
        sys.exit(
            "The OpenAI Agents SDK peer is missing: `make bench-peers` installs it into "
            ".venv-bench (or install the `bench` extra into this venv); `--without-sdk` "
            "runs the bench without it."
        )
    queries: dict[str, dict[int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        embedded = {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        make_run = {**env, "DATABASE_URL": f"sqlite:///{tmp}/make-run.sqlite3"}
        servers = [(embedded, False, "embedded"), (make_run, None, "make-run")]
        if not options.skip_distributed:
            servers.append((distributed_env(env), True, "distributed"))
        running = []
        try:
            for mode_env, worker, name in servers:
                key = prepared(mode_env)
                server = DevServer(mode_env) if worker is None else Servers(mode_env, worker)
                running.append(server.__enter__())
                ways.append(Platform(name, running[-1].port, key))
                if name == "embedded":
                    ways.append(OpenAiDoor(running[-1].port, shell(mode_env, TOKEN)))

            async def run() -> tuple[dict, dict]:
                for way in ways:
                    if isinstance(way, Platform):
                        await way.open()
                turns = await interleaved(ways, options.turns, options.warmup)
                PACE["chunk_interval"] = PACED_INTERVAL
                first = await interleaved(
                    ways, options.paced_turns, 2, depths=PACED_DEPTHS, first=True
                )
                return turns, first

            samples, first_text = asyncio.run(run())
        finally:
            for server in running:
                server.__exit__()
            for way in ways:
                if isinstance(way, Sdk):
                    way.close()
        for mode_env, _worker, name in servers:
            queries[name] = {d: queries_per_turn(mode_env, f"go depth={d}") for d in DEPTHS}
    fake.stop()
    report(samples, queries)
    report_first_text(first_text, PACED_INTERVAL)


if __name__ == "__main__":
    main()
