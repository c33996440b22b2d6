"""Benchmark: what marking a run ended costs, and what asking whether it ended costs, on Redis.

A run's end is marked once (its flag, and its message on the ends' channel:
`delegation.runs.ended.run_mark_ended`, one pipeline), beside the way it was once marked (the
flag through Django's cache, then the message: two round trips). Every event a worker
sends asks whether its run ended (`EndWatch.ended`): from memory while the process is
subscribed, else by reading the flag (`flag_is_set`). Prints µs per call, p50 of 5 rounds of
2,000 calls, on Redis db 13 (flushed after).

Usage: .venv/bin/python bench/run_ends.py [--redis redis://127.0.0.1:6379/13]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ROUNDS, CALLS = 5, 2000


def per_call_us(call: Callable[[], object]) -> float:
    """µs per call of `call`, p50 of ROUNDS rounds of CALLS calls (after a warm-up round)."""
    for _ in range(CALLS // 10):
        call()
    rounds = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(CALLS):
            call()
        rounds.append((time.perf_counter() - started) / CALLS * 1e6)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench")
    os.environ["REDIS_URL"] = options.redis
    import django

    django.setup()
    import redis
    from django.core.cache import cache

    from delegation.runs import ended

    publisher = ended._publisher()

    def two_round_trips() -> None:
        run_id = uuid.uuid4()
        cache.set(ended.ENDED_KEY.format(run_id), 1, ended.KEEP_SECONDS)
        publisher.publish(ended.CHANNEL, str(run_id))

    feed = ended._FEED.get()
    deadline = time.monotonic() + 10
    while feed.generation is None and time.monotonic() < deadline:
        time.sleep(0.05)
    watch = ended.EndWatch(uuid.uuid4(), since=time.monotonic() + 60)
    rows = [
        ("mark ended: flag via Django's cache, then publish", per_call_us(two_round_trips)),
        ("mark ended: one pipeline (now)", per_call_us(lambda: ended.run_mark_ended(uuid.uuid4()))),
        ("read the flag", per_call_us(lambda: ended.flag_is_set(str(uuid.uuid4())))),
        ("ask at an event, subscribed", per_call_us(watch.ended)),
    ]
    redis.Redis.from_url(options.redis).flushdb()
    print("Run ends on Redis (µs per call, p50 of 5 rounds of 2,000)")
    for what, us in rows:
        print(f"  {what:<52} {us:8.1f}")
    print()
    names = ("mark_ended_before", "mark_ended", "flag_read", "ask_subscribed")
    for name, (_, us) in zip(names, rows, strict=True):
        print(f"run_ends_{name}_us={us:.1f}")


if __name__ == "__main__":
    main()
