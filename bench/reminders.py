"""Benchmark: reminder dispatch on Postgres with 100,000 pending rows.

1. Throughput: 100,000 pending reminders all due (a backlog, e.g. after downtime); one
   dispatcher drains them. Then 100,000 pending of which 10,000 are due and 90,000 are in the
   future (the partial index must keep claims cheap). Prints reminders dispatched per second.
2. Lateness: 100,000 pending rows in the future as ballast, plus 20,000 reminders falling due
   evenly over 20 s (1,000/s); one dispatcher runs every REMINDER_DISPATCH_SECONDS as beat
   would trigger it. Prints p50/p99/max of sent_at - remind_at, at the default interval and a
   shorter one.

Each dispatched reminder is written to chat history (a ChatMessage in the user's Reminders
session), marked sent, and a `reminder.due` event is handed to the channel layer (in-memory
here, or Redis with --redis). Uses its own database (created and migrated if missing).

Usage: .venv/bin/python bench/reminders.py [--pg postgres://postgres@127.0.0.1:5432/agent_platform_rem_bench]
       [--redis redis://127.0.0.1:6379/12] [--rows 100000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/agent_platform_rem_bench"


def setup(pg_url: str, redis_url: str) -> None:
    """Point Django at the bench database (created if missing), migrate it."""
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
        if not admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]
        ).fetchone():
            admin.execute(f'CREATE DATABASE "{config["NAME"]}"')
    os.environ.update(
        DATABASE_URL=pg_url, DJANGO_SETTINGS_MODULE="config.settings", DJANGO_LOG_LEVEL="WARNING"
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def reset(users: int) -> list[int]:
    """Empty reminders and chat; `users` bench users; their ids."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE reminders_reminder, chat_chatmessage, chat_chatsession CASCADE")
    user_model = get_user_model()
    have = list(
        user_model.objects.filter(username__startswith="bench-").values_list("pk", flat=True)
    )
    if len(have) < users:
        user_model.objects.bulk_create(
            [user_model(username=f"bench-{i}") for i in range(len(have), users)]
        )
    return list(
        user_model.objects.filter(username__startswith="bench-").values_list("pk", flat=True)
    )


def insert(users: list[int], count: int, first: object, spacing: timedelta) -> None:
    """`count` pending chat reminders, the i-th due at first + i * spacing."""
    from reminders.models import Reminder

    rows = []
    for i in range(count):
        at = first + spacing * i
        rows.append(
            Reminder(user_id=users[i % len(users)], remind_at=at, due_at=at, content=f"Bench {i}")
        )
        if len(rows) == 5000:
            Reminder.objects.bulk_create(rows)
            rows = []
    Reminder.objects.bulk_create(rows)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reminders_reminder")


def claim_plan() -> str:
    """How Postgres runs the dispatcher's claim."""
    from django.db import connection, transaction
    from django.utils import timezone

    from reminders.dispatch import reminder_claim_due  # noqa: F401  (the query below is its SQL)
    from reminders.models import Reminder, ReminderStatus

    query = (
        Reminder.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(status=ReminderStatus.PENDING, due_at__lte=timezone.now())
        .order_by("due_at")[:500]
    )
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = query.query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        return " / ".join(row[0].strip() for row in cursor.fetchall()[:4])


def throughput(users: list[int], rows: int, due: int) -> float:
    """Reminders per second one dispatcher sends with `rows` pending, `due` of them due."""
    from django.utils import timezone

    from chat.events import flush_events
    from reminders.dispatch import reminders_dispatch
    from reminders.models import Reminder, ReminderStatus

    now = timezone.now()
    insert(users, due, now - timedelta(seconds=60), timedelta(microseconds=60_000_000 // due))
    if rows > due:
        insert(users, rows - due, now + timedelta(hours=1), timedelta(milliseconds=10))
    started = time.perf_counter()
    stats = reminders_dispatch(max_seconds=3600)
    elapsed = time.perf_counter() - started
    flush_events(60)
    assert stats.sent == due == Reminder.objects.filter(status=ReminderStatus.SENT).count()
    return due / elapsed


def lateness(
    users: list[int], ballast: int, count: int, seconds: float, interval: float
) -> list[float]:
    """Lateness (s) of `count` reminders falling due over `seconds`, with beat-style passes."""
    from django.utils import timezone

    from reminders.dispatch import reminders_dispatch
    from reminders.models import Reminder, ReminderStatus

    insert(users, ballast, timezone.now() + timedelta(hours=2), timedelta(milliseconds=10))
    start = timezone.now() + timedelta(seconds=2)
    insert(users, count, start, timedelta(seconds=seconds / count))
    end = time.monotonic() + (start - timezone.now()).total_seconds() + seconds + interval + 1
    next_tick = time.monotonic()
    while time.monotonic() < end:
        reminders_dispatch()
        next_tick += interval
        time.sleep(max(0.0, next_tick - time.monotonic()))
    sent = Reminder.objects.filter(status=ReminderStatus.SENT).values_list("remind_at", "sent_at")
    delays = [(sent_at - remind_at).total_seconds() for remind_at, sent_at in sent]
    assert len(delays) == count, f"{len(delays)} of {count} sent"
    return sorted(delays)


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(len(values) * p))]


def main() -> None:
    """Run both measurements and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default=os.environ.get("REMINDER_BENCH_PG", DEFAULT_PG))
    parser.add_argument("--redis", default="", help="channel layer on Redis (default in-memory)")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    setup(args.pg, args.redis)
    from django.conf import settings
    from django.utils import timezone

    layer = "Redis" if args.redis else "in-memory"
    print(f"reminder dispatch on Postgres, batch {settings.REMINDER_BATCH_SIZE}, {layer} layer")
    users = reset(1000)
    rate = throughput(users, args.rows, args.rows)
    print(f"  backlog: {args.rows:,} pending, all due:        {rate:8,.0f} reminders/s")
    users = reset(1000)
    due = args.rows // 10
    rate = throughput(users, args.rows, due)
    print(f"  {args.rows:,} pending, {due:,} due (rest future): {rate:8,.0f} reminders/s")
    users = reset(1000)
    insert(users, args.rows, timezone.now(), timedelta(milliseconds=10))
    print(f"  claim plan: {claim_plan()}")
    for interval in (settings.REMINDER_DISPATCH_SECONDS, 0.5):
        users = reset(1000)
        delays = lateness(users, args.rows, 20_000, 20.0, interval)
        p50, p99, worst = (statistics.median(delays), pct(delays, 0.99), delays[-1])
        print(
            f"  lateness, {args.rows:,} pending + 20,000 due over 20 s, pass every {interval:g} s: "
            f"p50 {p50 * 1000:,.0f} ms, p99 {p99 * 1000:,.0f} ms, max {worst * 1000:,.0f} ms"
        )


if __name__ == "__main__":
    main()
