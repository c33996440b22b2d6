"""Benchmark: how many streaming turns one Celery worker process holds at once.

Postgres, Redis, ONE real Celery worker process and a slow fake model (bench/fake_stream.py:
every answer streams for 2 s in 20 pieces, from its own asyncio process). Each turn is
delegated: the lead asks one expert (depth 1), so it makes three model calls (the lead's ask,
the expert's answer, the lead's answer): about 6 s alone. Turns are started through the real
turn service (`turn_start`, as the websocket and the API do) from this process, N at once, each
in a chat session this process joined on the channel layer first (as the page's websocket
does), and each is timed from its start to the arrival of the entry agent's `run.completed`
(bench/turn_driver.py). The worker runs the chosen pool ("after": `--pool threads`,
`--concurrency` 200 by default) after Celery's prefork pool with 4 processes ("before"; 1 and
50 turns by default, as 4 at a time makes 200 take 5 minutes: `--before-levels 1,50,200`).

Prints per pool and number of turns: turns/s, p50/p99 turn time and p99 over a single turn's
time, the p99 of the run's end in the database and of its event's lag behind it, how late the
model's text reaches the user, failures, the worker's memory at idle and at peak (PSS: pages a
prefork pool's children share are shared out, not counted once per child; RSS beside it),
memory per in-flight turn (peak - idle over the turns in flight at once), the worker's
Postgres connections at peak, its CPU per turn, the most streams the fake held at once and the
machine's load (os.getloadavg); then where each turn's time went (queued, the lead's ask, the
expert, the lead's answer, the event's way to the user) and the CPU per turn of each process.

Usage: .venv/bin/python bench/concurrency.py [--levels 1,50,200,500] [--before-levels 1,50]
       [--pool threads] [--concurrency 200] [--seconds 2] [--skip-before]
       [--worker-env NAME=VALUE ...]   (e.g. DATABASE_POOL_MAX_SIZE=20, to compare)
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from concurrency_servers import CPU_OF, Fake, Worker, cpu_now, cpu_spent, worker_connections
from harness import base_env, distributed_env, manage, shell
from process_probe import Peaks, usage
from turn_driver import PHASES, Listener, Turn, drive, phases

TEAM = """
from django.contrib.auth import get_user_model
from agents.models import Agent
from agents.services import agent_revision_record
get_user_model().objects.get_or_create(username="bench")
Agent.objects.filter(is_entry=True).update(is_entry=False)
def make(name, entry=False):
    agent, _ = Agent.objects.update_or_create(name=name, defaults=dict(
        display_name=name, provider="openai", model="m", system_prompt=f"You are {name}.",
        is_entry=entry, tool_keys=[]))
    return agent
lead, expert = make("lead", True), make("expert")
lead.allowed_subagents.set([expert])
for agent in (lead, expert): agent_revision_record(agent=agent)
print("ok")
"""
SINGLE_TURNS = 3  # "1 turn" is this many, one after the other: the single turn's time


@dataclass
class Level:
    """One number of turns started at once, as one pool ran them."""

    pool: str
    count: int  # started at once (1: one at a time)
    turns: list[Turn]
    pss: float
    rss: float
    connections: int
    cpu: dict[str, float]  # seconds, by process (CPU_OF)
    streams: int
    threads: int
    load: float
    cold: bool  # the worker's first burst: each new thread's first turn
    phases: dict[str, list[float]]
    piece_lags: list[float]  # how late each delta's oldest piece of text reached the user
    events: int  # events the listener received

    @property
    def times(self) -> list[float]:
        """Each turn that succeeded: send to the user's run.completed, in seconds."""
        return [t.took for t in self.turns if t.took is not None and t.status == "succeeded"]

    @property
    def failed(self) -> int:
        """Turns that did not succeed, or whose end never reached the user."""
        return len(self.turns) - len(self.times)

    @property
    def in_database(self) -> list[float]:
        """Each turn's start to its root run's end in the database."""
        return [t.finished - t.started for t in self.turns if t.finished is not None]

    @property
    def lag(self) -> list[float]:
        """How long each turn's run.completed took to reach the user after the run ended."""
        return [t.seen - t.finished for t in self.turns if t.seen and t.finished]

    @property
    def rate(self) -> float:
        """Turns per second, first start to last end seen."""
        seen = [t.seen for t in self.turns if t.seen is not None]
        wall = max(seen, default=0.0) - min(t.started for t in self.turns)
        return len(seen) / wall if seen and wall > 0 else 0.0


def run_level(
    worker: Worker, count: int, listener: Listener, fake: Fake, *, cold: bool = False
) -> Level:
    """Start `count` turns at once (one after the other for the single turn) and measure."""
    print(f"  {worker.label}: {count} turns{' (cold)' if cold else ''}", flush=True)
    fake.streams(reset=True)
    before, lags_from, events_from = (
        cpu_now(worker, fake),
        len(listener.piece_lags),
        listener.events,
    )
    timeout = _timeout(count, worker.concurrency)
    with Peaks(worker.process.pid, worker_connections) as peaks:
        if count == 1:
            turns = [turn for _ in range(SINGLE_TURNS) for turn in drive(1, listener, timeout)]
        else:
            turns = drive(count, listener, timeout)
    return Level(
        worker.label,
        count,
        turns,
        peaks.pss,
        peaks.rss,
        peaks.extra_peak,
        cpu_spent(before, cpu_now(worker, fake)),
        fake.streams(),
        peaks.threads,
        os.getloadavg()[0],
        cold,
        phases(turns),
        listener.piece_lags[lags_from:],
        listener.events - events_from,
    )


def run_pool(
    pool: str, concurrency: int, levels: list[int], env: dict[str, str], fake: Fake, log: Path
) -> tuple[list[Level], float, float]:
    """Every level on one worker of this pool, after a warm-up turn and a first burst of as
    many turns as it runs at once (its threads' first turns: reported, marked cold); with the
    worker's memory (PSS and RSS, MB) at idle, after the warm-up turn."""
    listener = Listener()
    with Worker(env, pool, concurrency, log) as worker:
        drive(1, listener, 120)  # imports, first connections, prepared statements
        idle = usage(worker.process.pid)
        burst = min(concurrency, max(levels))
        rows = [run_level(worker, burst, listener, fake, cold=True)]
        rows += [run_level(worker, count, listener, fake) for count in levels]
    return rows, idle.pss, idle.rss


def _timeout(turns: int, concurrency: int) -> float:
    """How long a level may take: three times what its rounds of turns need, and a minute."""
    rounds = -(-turns // concurrency)
    return 60 + 3 * rounds * 3 * float(os.environ.get("BENCH_ANSWER_SECONDS", "2"))


def p50(samples: list[float]) -> float:
    """The median (nan with no samples)."""
    return statistics.median(samples) if samples else math.nan


def p99(samples: list[float]) -> float:
    """The 99th percentile, nearest rank (nan with no samples)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else math.nan


def report(
    rows: list[Level], idle: dict[str, tuple[float, float]], concurrency: dict[str, int]
) -> None:
    """One table, then key=value lines."""
    head = f"{'pool':13} {'turns':>5} {'turns/s':>7} {'p50 s':>6} {'p99 s':>6} {'p99/1':>5} "
    head += f"{'db99':>5} {'lag99':>5} {'pc50':>5} {'pc99':>5} {'fail':>4} {'PSS MB':>6} "
    head += f"{'RSS MB':>6} {'MB/turn':>7} "
    head += f"{'PG':>3} {'CPU ms/turn':>11} {'fake':>4} {'thr':>4} {'load1':>5}"
    print("\n" + head)
    single = {row.pool: p50(row.times) for row in rows if row.count == 1}
    for row in rows:
        grown = (row.pss - idle[row.pool][0]) / min(row.count, concurrency[row.pool])
        per_turn = f"{grown:7.2f}" if row.count > 1 else f"{'-':>7}"
        one = single.get(row.pool)
        ratio = p99(row.times) / one if one else math.nan
        count = f"{row.count}{'c' if row.cold else ''}"
        print(
            f"{row.pool:13} {count:>5} {row.rate:7.1f} {p50(row.times):6.2f} "
            f"{p99(row.times):6.2f} {ratio:5.2f} {p99(row.in_database):5.2f} {p99(row.lag):5.2f} "
            f"{p50(row.piece_lags):5.2f} {p99(row.piece_lags):5.2f} "
            f"{row.failed:4d} {row.pss:6.0f} {row.rss:6.0f} {per_turn} {row.connections:3d} "
            f"{row.cpu['worker'] * 1000 / len(row.turns):11.0f} {row.streams:4d} "
            f"{row.threads:4d} {row.load:5.2f}"
        )
    print(
        "turns: started at once (1: one at a time, the single turn); c: the worker's first burst"
        "\np50, p99: turn start to the user's run.completed; p99/1: p99 over the single turn's"
        " p50;\ndb99: p99 of start to the root run's end in the database; lag99: p99 of that"
        " end to the\nuser's run.completed; pc50, pc99: how late the model's text reaches the user"
        " (each delta's\noldest piece); MB/turn: (peak PSS - idle PSS) / turns in flight;"
        " PG: the worker's\nPostgres sessions at peak; fake: most streams the model held at once;"
        " thr: the worker's\nthreads at peak; load1: os.getloadavg() at the end"
    )
    for pool, (pss, rss) in idle.items():
        print(f"{pool}: idle worker PSS {pss:.0f} MB, RSS {rss:.0f} MB")
    print(
        "\nWhere the time goes, s (p50 / p99):\n"
        + f"{'pool':13} {'turns':>5} "
        + " ".join(f"{name:>15}" for name in PHASES)
    )
    for row in rows:
        count = f"{row.count}{'c' if row.cold else ''}"
        spans = " ".join(
            f"{f'{p50(row.phases[name]):.2f} / {p99(row.phases[name]):.2f}':>15}" for name in PHASES
        )
        print(f"{row.pool:13} {count:>5} {spans}")
    print("\nCPU per turn by process, ms (Redis: shared with anything else using it); events")
    print("each turn's session received:")
    print(f"{'pool':13} {'turns':>5} " + " ".join(f"{role:>8}" for role in CPU_OF) + "   events")
    for row in rows:
        count = f"{row.count}{'c' if row.cold else ''}"
        spent = " ".join(f"{row.cpu[role] * 1000 / len(row.turns):8.1f}" for role in CPU_OF)
        print(f"{row.pool:13} {count:>5} {spent} {row.events / len(row.turns):8.1f}")
    for row in rows:
        key = f"{row.pool.replace(' ', '')}.{row.count}{'c' if row.cold else ''}"
        print(
            f"{key}.p50={p50(row.times):.3f} {key}.p99={p99(row.times):.3f} "
            f"{key}.failed={row.failed} {key}.pss_mb={row.pss:.0f} {key}.load={row.load:.2f}"
        )


def main() -> None:
    """Start the fake model, set up the database, run each pool, print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,50,200,500")
    parser.add_argument("--before-levels", default="1,50")
    parser.add_argument("--pool", default="threads")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=2.0, help="each model answer's length")
    parser.add_argument("--skip-before", action="store_true")
    parser.add_argument(
        "--worker-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the worker (e.g. DATABASE_POOL_MAX_SIZE=0 to compare)",
    )
    options = parser.parse_args()

    with Fake(options.seconds) as fake:
        env = distributed_env(
            base_env(f"http://127.0.0.1:{fake.port}/v1"),
            database="agent_platform_bench_concurrency",
            redis_db=12,
        )
        env["DJANGO_SETTINGS_MODULE"] = "config.settings"
        env["BENCH_ANSWER_SECONDS"] = str(options.seconds)
        manage(env, "migrate", "--no-input")
        shell(env, TEAM)
        os.environ.update(env)
        env.update(dict(pair.split("=", 1) for pair in options.worker_env))
        import django

        django.setup()
        log = Path(tempfile.gettempdir()) / "bench-concurrency-worker.log"
        log.write_bytes(b"")
        runs = [] if options.skip_before else [("prefork", 4, options.before_levels)]
        runs.append((options.pool, options.concurrency, options.levels))
        rows, idle, concurrency = [], {}, {}
        for pool, size, levels in runs:
            print(f"{pool} x{size}: {levels} turns at once (worker log: {log})", flush=True)
            counts = [int(n) for n in levels.split(",")]
            done, pss, rss = run_pool(pool, size, counts, env, fake, log)
            rows += done
            idle[f"{pool} x{size}"], concurrency[f"{pool} x{size}"] = (pss, rss), size
    report(rows, idle, concurrency)


if __name__ == "__main__":
    main()
