"""Benchmark: reminder dispatch on Postgres at 100,000 and 1,000,000 pending, one and two
dispatcher processes.

For each size and number of dispatchers:
1. Backlog: every pending reminder is due (e.g. after downtime); the dispatchers (separate
   processes, started together) each call `reminders_dispatch` until a pass finds nothing.
   Prints reminders dispatched per second, the total time, the dispatchers' CPU and their
   Postgres backends' per reminder, and the exactly-once check: sent rows = pending rows, one
   chat message per reminder, every reminder claimed once (attempts = 1) and the dispatchers'
   counts of what they sent add up to the rows. Also how Postgres plans the claim.
2. Lateness: the same number of pending reminders an hour ahead as ballast, plus --arrivals
   reminders per second falling due over 20 s; each dispatcher runs the beat task's pass
   (`reminders.tasks.dispatch_reminders`) on beat's schedule, the dispatchers taking turns as
   workers take beat's triggers. Prints p50/p99/max of sent_at - remind_at, and the same check.
Each line ends with the machine's load (os.getloadavg(): 1-minute average at the end of the
run, and the highest seen during it): the machine is shared, figures move with it.

Each dispatched reminder is written to chat history (a ChatMessage in the user's Reminders
session), marked sent, and its `reminder.due` event handed to the channel layer (in-memory by
default, where a process with no sockets drops it; Redis with --redis). Rows are generated with
generate_series, in the bench's own database (created and migrated if missing).

Usage: .venv/bin/python bench/reminders.py [--rows 100000,1000000] [--dispatchers 1,2]
       [--arrivals 1000] [--pg postgres://postgres@127.0.0.1:5432/agent_platform_rem_bench]
       [--redis redis://127.0.0.1:6379/12] [--skip-lateness]
The defaults take about ten minutes; `--rows 100000` about two.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from harness import database_ensure  # noqa: E402  (bench/ is on the path: run as a script)

DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/agent_platform_rem_bench"
USERS = 1000
LATENESS_SECONDS = 20.0


def setup(pg_url: str, redis_url: str, *, migrate: bool) -> None:
    """Point Django at the bench database (created if missing), with production settings."""
    if migrate:
        database_ensure(pg_url)
    os.environ.update(
        DATABASE_URL=pg_url, DJANGO_SETTINGS_MODULE="config.settings", DJANGO_LOG_LEVEL="WARNING"
    )
    # Production settings (DEBUG off: no query log growing through the run).
    os.environ.update(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="bench-only", DJANGO_ALLOWED_HOSTS="x")
    os.environ.pop("CELERY_BROKER_URL", None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def reset() -> list[int]:
    """Empty reminders and chat; the bench users' ids (created on the first run)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE reminders_reminder, chat_chatmessage, chat_chatsession CASCADE")
    user_model = get_user_model()
    bench_users = user_model.objects.filter(username__startswith="bench-")
    have = bench_users.count()
    if have < USERS:
        user_model.objects.bulk_create(
            [user_model(username=f"bench-{i}") for i in range(have, USERS)]
        )
    return list(bench_users.order_by("pk").values_list("pk", flat=True))


def insert(users: list[int], count: int, first: object, spacing: timedelta) -> None:
    """`count` pending chat reminders, the i-th due at first + i * spacing, user i % users."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO reminders_reminder (user_id, remind_at, due_at, content, language, "
            "channel, status, attempts, last_error, late, created_at) "
            "SELECT (%(users)s::int[])[1 + g %% %(n)s], t, t, 'Bench ' || g, '', 'chat', "
            "'pending', 0, '', false, now() FROM generate_series(0, %(count)s - 1) AS g, "
            "LATERAL (SELECT %(first)s::timestamptz + g * %(spacing)s::interval AS t) AS at",
            {"users": users, "n": len(users), "count": count, "first": first, "spacing": spacing},
        )


def settle() -> None:
    """The state autovacuum reaches after a load: statistics, visibility map, hint bits."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE reminders_reminder")


def claim_plan() -> str:
    """How Postgres runs the dispatcher's claim (reminders.dispatch.reminder_claim_due's query)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from reminders.models import Reminder, ReminderStatus

    query = (
        Reminder.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(status=ReminderStatus.PENDING, due_at__lte=timezone.now())
        .order_by("due_at")
        .values_list("id")[:500]
    )
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = query.query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        return " / ".join(row[0].split("  (")[0].strip() for row in cursor.fetchall())


def check(expected: int, sent_by_dispatchers: int) -> str:
    """Each measured reminder (not the ballast an hour ahead) sent exactly once: the rows, the
    chat messages, the claims and the dispatchers' counts agree. Raises if they do not."""
    from django.db.models import Count, Q
    from django.utils import timezone

    from chat.models import ChatMessage
    from reminders.models import Reminder, ReminderStatus

    counts = Reminder.objects.filter(remind_at__lt=timezone.now()).aggregate(
        sent=Count("pk", filter=Q(status=ReminderStatus.SENT)),
        once=Count("pk", filter=Q(status=ReminderStatus.SENT, attempts=1)),
    )
    messages = ChatMessage.objects.count()
    ok = counts["sent"] == counts["once"] == messages == sent_by_dispatchers == expected
    assert ok, f"{counts}, {messages} messages, dispatchers sent {sent_by_dispatchers}"
    return f"each once ({expected:,} sent, {messages:,} messages, attempts 1)"


class Load:
    """The machine's 1-minute load average, sampled every second while a run lasts."""

    def __enter__(self) -> Load:
        self.samples = [os.getloadavg()[0]]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.done.wait(1.0):
            self.samples.append(os.getloadavg()[0])

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
        self.samples.append(os.getloadavg()[0])

    def __str__(self) -> str:
        return f"load {self.samples[-1]:.2f} (max {max(self.samples):.2f})"


def dispatchers_run(
    args: argparse.Namespace, mode: str, count: int, when_ready: Callable[[], float] = float
) -> list:
    """Start `count` dispatcher processes running `mode`; once all are ready, call `when_ready`
    (which returns until when they run, for lateness), let them go at once, and return what
    each printed (its stats, its times)."""
    processes = []
    for index in range(count):
        command = [sys.executable, __file__, "--pg", args.pg, "--redis", args.redis]
        command += ["--worker", mode, "--turn", f"{index}/{count}"]
        processes.append(
            subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        )
    for process in processes:
        assert process.stdout.readline().strip() == "ready", "a dispatcher did not start"
    until = when_ready()
    start_at = time.time() + 0.2
    for process in processes:
        process.stdin.write(f"{start_at} {until}\n")
        process.stdin.close()
    found = []
    for process in processes:
        out = process.stdout.read()
        assert process.wait() == 0, f"a dispatcher failed (exit {process.returncode})"
        found.append(json.loads(out.strip().splitlines()[-1]))
    return found


def backlog(args: argparse.Namespace, rows: int, dispatchers: int) -> str:
    """All `rows` pending reminders due: how fast the dispatchers drain them."""
    from django.utils import timezone

    users = reset()
    now = timezone.now()
    insert(users, rows, now - timedelta(seconds=60), timedelta(microseconds=60_000_000 // rows))
    settle()
    if dispatchers == 1:
        print(f"  claim plan at {rows:,} pending: {claim_plan()}", flush=True)
    with Load() as load:
        done = dispatchers_run(args, "backlog", dispatchers)
    seconds = max(d["ended"] for d in done) - min(d["started"] for d in done)
    verdict = check(rows, sum(d["sent"] for d in done))
    return (
        f"backlog {rows:>9,} due, {dispatchers} dispatcher(s): {rows / seconds:8,.0f}/s, "
        f"{seconds:6.1f} s total, {cpu_per_reminder(done, rows)}; {verdict}; {load}"
    )


def lateness(args: argparse.Namespace, rows: int, dispatchers: int) -> str:
    """`rows` pending an hour ahead, plus arrivals falling due over 20 s: how late they go out."""
    from django.conf import settings
    from django.utils import timezone

    from reminders.models import Reminder, ReminderStatus

    users = reset()
    insert(users, rows, timezone.now() + timedelta(hours=1), timedelta(microseconds=100))
    settle()
    count = int(args.arrivals * LATENESS_SECONDS)

    def arrivals() -> float:
        """The reminders falling due, from a second after the dispatchers start; until when
        the dispatchers run."""
        start = timezone.now() + timedelta(seconds=1)
        insert(users, count, start, timedelta(seconds=LATENESS_SECONDS / count))
        return start.timestamp() + LATENESS_SECONDS + 2 * settings.REMINDER_DISPATCH_SECONDS

    with Load() as load:
        done = dispatchers_run(args, "lateness", dispatchers, arrivals)
    sent = Reminder.objects.filter(status=ReminderStatus.SENT).values_list("remind_at", "sent_at")
    delays = sorted((sent_at - remind_at).total_seconds() for remind_at, sent_at in sent)
    verdict = check(count, sum(d["sent"] for d in done))
    p50, p99 = statistics.median(delays), delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    return (
        f"lateness {rows:>8,} pending + {args.arrivals:,}/s due, {dispatchers} dispatcher(s), "
        f"beat every {settings.REMINDER_DISPATCH_SECONDS:g} s: p50 {p50 * 1000:,.0f} ms, "
        f"p99 {p99 * 1000:,.0f} ms, max {delays[-1] * 1000:,.0f} ms; {verdict}; {load}"
    )


def worker(mode: str, turn: str) -> None:
    """One dispatcher process: `backlog` drains what is due; `lateness` runs the beat task on
    beat's schedule until told, this process taking every n-th trigger (turn "k/n"). Waits for
    the start time on stdin; prints its stats."""
    from django.conf import settings

    from chat.events import flush_events
    from config.collector import collector_freeze_startup
    from reminders.dispatch import DispatchStats, reminders_dispatch
    from reminders.tasks import dispatch_reminders

    collector_freeze_startup()  # as a Celery worker process does once it has loaded its code
    index, of = (int(part) for part in turn.split("/"))
    print("ready", flush=True)
    start_at, until = (float(value) for value in sys.stdin.readline().split())
    time.sleep(max(0.0, start_at - time.time()))
    total = DispatchStats()
    started, cpu, backend = time.time(), time.process_time(), backend_cpu()
    if mode == "backlog":
        while True:
            stats = reminders_dispatch(max_seconds=3600)
            total.add(stats)
            if stats.batches == 0:
                break
    else:
        interval = settings.REMINDER_DISPATCH_SECONDS
        tick = start_at + index * interval
        while tick < until:
            time.sleep(max(0.0, tick - time.time()))
            total.add(DispatchStats(**dispatch_reminders()))
            tick += of * interval
    flush_events(60)  # done when every event is in the channel layer
    times = {"started": started, "ended": time.time(), "cpu": time.process_time() - cpu}
    print(json.dumps({**asdict(total), **times, "pg_cpu": backend_cpu() - backend}), flush=True)


def backend_cpu() -> float:
    """CPU seconds this process's Postgres backend has used (NaN when Postgres runs elsewhere)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def cpu_per_reminder(done: list[dict], count: int) -> str:
    """The dispatchers' CPU and their Postgres backends' per reminder: the cost of a reminder,
    which a busy shared machine changes less than the rate."""
    cpu, pg = (sum(d[key] for d in done) / count * 1e6 for key in ("cpu", "pg_cpu"))
    return f"CPU {cpu:.0f} µs + Postgres {pg:.0f} µs a reminder"


def main() -> None:
    """Run the measurements and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pg", default=os.environ.get("REMINDER_BENCH_PG", DEFAULT_PG))
    parser.add_argument("--redis", default="", help="channel layer on Redis (default in-memory)")
    parser.add_argument("--rows", default="100000,1000000", help="pending reminders, per run")
    parser.add_argument("--dispatchers", default="1,2", help="dispatcher processes, per run")
    parser.add_argument("--arrivals", type=int, default=1000, help="per second, lateness run")
    parser.add_argument("--skip-lateness", action="store_true")
    parser.add_argument("--worker", choices=["backlog", "lateness"], help=argparse.SUPPRESS)
    parser.add_argument("--turn", default="0/1", help=argparse.SUPPRESS)
    args = parser.parse_args()
    setup(args.pg, args.redis, migrate=args.worker is None)
    if args.worker:
        worker(args.worker, args.turn)
        return
    from django.conf import settings

    layer = "Redis" if args.redis else "in-memory"
    print(
        f"reminder dispatch on Postgres, batch {settings.REMINDER_BATCH_SIZE}, {layer} layer, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start",
        flush=True,
    )
    for rows in (int(n) for n in args.rows.split(",")):
        for dispatchers in (int(n) for n in args.dispatchers.split(",")):
            print("  " + backlog(args, rows, dispatchers), flush=True)
            if not args.skip_lateness:
                print("  " + lateness(args, rows, dispatchers), flush=True)


if __name__ == "__main__":
    main()
