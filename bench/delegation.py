"""Benchmark: a streamed turn at delegation depth 0, 1 and 2, embedded and distributed.

A zero-latency fake OpenAI server scripts the team: the entry agent delegates to `hop1` when the
message asks for depth >= 1, `hop1` to `hop2` for depth 2; every agent otherwise streams a
20-chunk answer. A turn at depth d makes 2d + 1 model calls. We time message.send → the entry
agent's run.completed at a real websocket client (every event received), against daphne
(embedded: in-process pool, SQLite) and daphne + a Celery worker (distributed: Postgres,
Redis), beside the raw `openai` client making the same number of calls. Prints p50/p90 ms,
the per-hop overhead it implies, and SQL queries per turn.

Usage: .venv/bin/python bench/delegation.py [--turns 30] [--skip-distributed]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

from harness import (
    SESSION,
    Servers,
    base_env,
    distributed_env,
    manage,
    percentiles,
    queries_per_turn,
    raw_calls,
    root_completed,
    shell,
    websocket_turns,
)

from tests.fake_openai import FakeOpenAI, delegate, text

ANSWER = [f"word{i} " for i in range(20)]
DEPTHS = (0, 1, 2)

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
    """Delegate one level down while the requested depth allows it, else answer."""
    me = body["messages"][0]["content"].removeprefix("You are ").rstrip(".")
    last = body["messages"][-1]
    level = {"entry": 0, "hop1": 1, "hop2": 2}.get(me)  # None: the raw client's calls
    if last["role"] == "user" and level is not None:
        depth = int(last["content"].split("depth=")[1][0])
        if depth > level:
            return delegate(f"hop{level + 1}", last["content"])
    return text(*ANSWER)


def measure(env: dict[str, str], turns: int, worker: bool) -> dict[int, list[float]]:
    """Turn times per depth against real servers."""
    manage(env, "migrate", "--no-input")
    shell(env, TEAM)
    session_key = shell(env, SESSION)
    results = {}
    with Servers(env, with_worker=worker) as servers:
        for depth in DEPTHS:
            texts = [f"please go depth={depth}"] * turns
            asyncio.run(websocket_turns(servers.port, session_key, texts[:5], root_completed))
            results[depth] = asyncio.run(
                websocket_turns(servers.port, session_key, texts, root_completed)
            )
    return results


def main() -> None:
    """Run every mode and print one table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--skip-distributed", action="store_true")
    options = parser.parse_args()

    fake = FakeOpenAI().start()
    fake.fallback = fake_team
    raw = {d: raw_calls(fake.base_url, 2 * d + 1, options.turns) for d in DEPTHS}
    env = base_env(fake.base_url)
    modes = {}
    with tempfile.TemporaryDirectory() as tmp:
        embedded = {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        modes["embedded"] = measure(embedded, options.turns, worker=False)
        queries = {d: queries_per_turn(embedded, f"go depth={d}") for d in DEPTHS}
    if not options.skip_distributed:
        distributed = distributed_env(env)
        modes["distributed"] = measure(distributed, options.turns, worker=True)
    fake.stop()

    print(
        f"\nStreamed turn by delegation depth ({options.turns} turns each, zero-latency fake "
        "model, 20-chunk answers; times in ms)"
    )
    print(
        f"{'depth':>5} {'calls':>5} {'raw p50':>8} "
        + " ".join(f"{m + ' p50':>16} {m + ' p90':>16}" for m in modes)
        + f" {'SQL/turn':>9}"
    )
    for d in DEPTHS:
        row = f"{d:>5} {2 * d + 1:>5} {percentiles(raw[d])[0]:>8.1f} "
        for samples in modes.values():
            p50, p90 = percentiles(samples[d])
            row += f"{p50:>16.1f} {p90:>16.1f} "
        print(row + f"{queries[d]:>9}")
    print(
        "\nPer-hop overhead (turn p50 growth per level, minus the raw client's for the same "
        "two extra calls):"
    )
    raw0, raw2 = percentiles(raw[0])[0], percentiles(raw[2])[0]
    for mode, samples in modes.items():
        hop = (percentiles(samples[2])[0] - percentiles(samples[0])[0]) / 2
        print(f"  {mode:12} {hop - (raw2 - raw0) / 2:6.1f} ms per hop")
    for mode, samples in modes.items():
        ratio = percentiles(samples[1])[0] / percentiles(raw[1])[0]
        print(f"  {mode:12} depth-1 turn = {ratio:.1f}x the raw client's time")


if __name__ == "__main__":
    main()
