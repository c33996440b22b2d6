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

from tests.fake_openai import FakeOpenAI, text, tool_call

ANSWER = [f"word{i} " for i in range(20)]

AGENT = """
from agents.models import Agent
from agents.services import agent_revision_record
Agent.objects.filter(is_entry=True).update(is_entry=False)
agent, _ = Agent.objects.update_or_create(name="bench", defaults=dict(
    display_name="Bench", provider="openai", model="m", tool_keys=["calculate"], is_entry=True,
    system_prompt="bench"))
agent_revision_record(agent=agent)
print("ok")
"""


def fake_model(body: dict) -> object:
    """Tool call when the last message is the user's, else the streamed answer."""
    if body["messages"][-1]["role"] == "tool":
        return text(*ANSWER)
    return tool_call("calculate", {"expression": "6*7"})


def served_turns(env: dict[str, str], turns: int, with_worker: bool) -> list[float]:
    """Set up, start the servers, run warm-up and measured turns."""
    manage(env, "migrate", "--no-input")
    shell(env, AGENT)
    session_key = shell(env, SESSION)
    with Servers(env, with_worker=with_worker) as servers:
        texts = ["what is 6*7?"] * turns
        asyncio.run(websocket_turns(servers.port, session_key, texts[:5], root_completed))
        return asyncio.run(websocket_turns(servers.port, session_key, texts, root_completed))


def main() -> None:
    """Run every mode and print one table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--skip-distributed", action="store_true")
    options = parser.parse_args()

    fake = FakeOpenAI().start()
    fake.fallback = fake_model
    env = base_env(fake.base_url)
    rows = [
        ("raw openai client (2 calls, no persistence)", raw_calls(fake.base_url, 2, options.turns))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        embedded = {**env, "DATABASE_URL": f"sqlite:///{tmp}/bench.sqlite3"}
        rows.append(
            (
                "embedded: daphne + in-process pool + SQLite",
                served_turns(embedded, options.turns, with_worker=False),
            )
        )
        sqlite_queries = queries_per_turn(embedded, "what is 6*7?")
    pg_queries = None
    if not options.skip_distributed:
        distributed = distributed_env(env)
        rows.append(
            (
                "distributed: daphne + Celery worker + Postgres + Redis",
                served_turns(distributed, options.turns, with_worker=True),
            )
        )
        pg_queries = queries_per_turn(distributed, "what is 6*7?")
    fake.stop()

    raw_p50 = percentiles(rows[0][1])[0]
    print(
        f"\nOne streamed turn (tool call + 20-chunk answer), {options.turns} turns each, "
        "zero-latency fake model"
    )
    print(f"{'mode':58} {'p50 ms':>8} {'p90 ms':>8} {'x raw p50':>9}")
    for name, samples in rows:
        p50, p90 = percentiles(samples)
        print(f"{name:58} {p50:8.1f} {p90:8.1f} {p50 / raw_p50:9.1f}")
    print(
        f"\nSQL queries per turn (send + run, one thread): SQLite {sqlite_queries}"
        + (f", Postgres {pg_queries}" if pg_queries else "")
    )


if __name__ == "__main__":
    main()
