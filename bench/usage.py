"""Benchmark: what the usage ledger adds to one model call (latency and SQL queries).

Turns of one model call each run in this process (TASKS_RUN_SYNC: the run advances on commit,
in the caller's thread) against a zero-latency fake OpenAI server, on SQLite and, when PG_URL
is given, on Postgres. Each turn is timed and its queries counted twice: "before", with the
runner's two usage calls (the budget hold before the model call, the ledger row after it)
replaced by no-ops, and "after", with them, on a priced model with every money budget set
(turn, user day and month, agent day and month: the most work a call can cause). Also timed
alone: one hold + one charge. Prints p50/p90 ms and queries per call.

Usage: .venv/bin/python bench/usage.py [--turns 200] [--pg-url postgres://…/agent_platform]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _setup(database_url: str, fake_url: str) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "true",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DATABASE_URL": database_url,
            "TASKS_RUN_SYNC": "true",
            "OPENAI_BASE_URL": fake_url,
            "OPENAI_API_KEY": "x",
            "OPENAI_MAX_RETRIES": "0",
            "TURN_MAX_COST": "1000",
            "USER_DAILY_MAX_COST": "1000",
            "USER_MONTHLY_MAX_COST": "1000",
            "AGENT_DAILY_MAX_COST": "1000",
            "AGENT_MONTHLY_MAX_COST": "1000",
        }
    )
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _world() -> Any:
    from django.contrib.auth import get_user_model

    from agents.models import Agent
    from agents.services import agent_revision_record

    Agent.objects.filter(is_entry=True).update(is_entry=False)
    agent, _ = Agent.objects.update_or_create(
        name="bench",
        defaults={
            "display_name": "Bench",
            "provider": "openai",
            "model": "gpt-4o-mini",  # a seeded price
            "max_tokens": 200,
            "system_prompt": "You are bench.",
            "is_entry": True,
        },
    )
    agent_revision_record(agent=agent)
    user, _ = get_user_model().objects.get_or_create(username=f"bench-{uuid.uuid4().hex[:6]}")
    return user


def _measure(action: Any) -> tuple[float, int]:
    """Seconds and SQL queries of one call of `action`."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    connection.queries_log.clear()  # the log keeps 9000 queries: count from empty each time
    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        action()
        elapsed = time.perf_counter() - started
    return elapsed, len(captured)


def _turn(user: Any) -> None:
    """One turn of one model call, run to its end in this thread."""
    from delegation.turns import turn_start

    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="hi")


class _NoCharge:
    """What the runner got before the ledger existed: the reported tokens, no cost."""

    def __init__(self, usage: Any) -> None:
        self.usage = usage

    def message_usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
        }


def _without_ledger() -> None:
    """Patch the runner's usage calls to no-ops (the code path as it was before)."""
    from delegation.steps import runner

    runner.usage_hold = lambda **kwargs: None  # type: ignore[assignment]
    runner.usage_charge = lambda **kwargs: _NoCharge(kwargs["usage"])  # type: ignore[assignment]


def _hold_and_charge(user: Any, count: int) -> tuple[list[float], list[int]]:
    """One hold + one charge on a run, alone (no model call, no events)."""
    from agents.providers.base import ModelRequest, Usage
    from delegation.models import Run
    from delegation.usage.services import usage_charge, usage_hold

    run = Run.objects.select_related("root", "user").filter(user=user).first()
    request = ModelRequest(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])

    def both() -> None:
        hold = usage_hold(run=run, provider="openai", request=request)
        usage_charge(run=run, hold=hold, usage=Usage(11, 7))

    samples = [_measure(both) for _ in range(count)]
    return [s for s, _ in samples], [q for _, q in samples]


def _report(label: str, seconds: Any, queries: Any) -> tuple[float, float]:
    seconds, queries = list(seconds), list(queries)
    ordered = sorted(seconds)
    p50 = ordered[len(ordered) // 2] * 1000
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000
    per_call = sum(queries) / len(queries)
    print(f"  {label:<28} p50 {p50:7.2f} ms   p90 {p90:7.2f} ms   {per_call:5.1f} queries")
    return p50, per_call


def run(database_url: str, turns: int) -> None:
    """Before/after on one database."""
    from tests.fake_openai import FakeOpenAI, text

    fake = FakeOpenAI().start()
    fake.fallback = lambda body: text("a ", "short ", "answer")
    _setup(database_url, fake.base_url)
    from django.db import connection

    print(f"{connection.vendor}: {turns} turns of one model call each")
    from delegation.steps import runner

    user = _world()
    for _ in range(10):  # warm up: connections, imports, the first counters of the day
        _turn(user)
    with_ledger = runner.usage_hold, runner.usage_charge
    samples: dict[bool, list[tuple[float, int]]] = {False: [], True: []}
    for index in range(2 * turns):  # alternate, so load from other processes hits both alike
        ledger = index % 2 == 1
        if ledger:
            runner.usage_hold, runner.usage_charge = with_ledger
        else:
            _without_ledger()
        samples[ledger].append(_measure(lambda: _turn(user)))
    runner.usage_hold, runner.usage_charge = with_ledger
    before = _report("before (no ledger)", *zip(*samples[False], strict=True))
    after = _report("after (ledger + 5 budgets)", *zip(*samples[True], strict=True))
    _report("hold + charge alone", *_hold_and_charge(user, turns))
    added = after[0] - before[0], after[1] - before[1]
    print(f"  added per model call: {added[0]:+.2f} ms p50, {added[1]:+.1f} queries")
    fake.stop()


def main() -> None:
    """Parse arguments; run on SQLite (and Postgres in a child process, one Django per process)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--pg-url", default=os.environ.get("PG_URL", ""))
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    if args.database_url:
        run(args.database_url, args.turns)
        return
    with tempfile.TemporaryDirectory() as tmp:
        child = [sys.executable, __file__, "--turns", str(args.turns), "--database-url"]
        subprocess.run([*child, f"sqlite:///{tmp}/bench.sqlite3"], check=True)
    if args.pg_url:
        name = args.pg_url.rsplit("/", 1)[1] + "_usage_bench"
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", name])
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)
        subprocess.run([*child, args.pg_url.rsplit("/", 1)[0] + "/" + name], check=True)
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", name])


if __name__ == "__main__":
    main()
