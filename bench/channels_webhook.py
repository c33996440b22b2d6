"""How fast a channel's webhook is acknowledged while turns run: N signed LINE webhooks at once
against daphne, each a new event of a linked user (offline model); prints p50/p99 of the time
to the 200, and how many answers reached the fake LINE API. Embedded (SQLite, turns in the web
process) by default; `--distributed`: Postgres, Redis and a Celery worker, as deployed.

LINE waits a few seconds for the acknowledgement and redelivers on silence, so the webhook
only checks, keeps the event once and queues it; the turn runs after the answer.

    .venv/bin/python bench/channels_webhook.py [--concurrent 50] [--rounds 5] [--distributed]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Servers, distributed_env, manage, shell  # noqa: E402
from tests.channels.conftest import SECRET, line_body, signature, text_event  # noqa: E402
from tests.channels.fake_line import start_fake_line  # noqa: E402

LINK = """
from django.contrib.auth import get_user_model
from chat.channels.models import ChannelLink
for i in range({users}):
    user, _ = get_user_model().objects.get_or_create(username=f"line{{i}}")
    ChannelLink.objects.get_or_create(
        channel="line", external_id=f"U{{i:04d}}", defaults={{"user": user}}
    )
print("ok")
"""


async def one_round(url: str, concurrent: int, round_number: int) -> list[float]:
    """`concurrent` webhooks at once, each from its own linked user; their ack times."""
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:

        async def send(i: int) -> float:
            body = line_body(text_event(f"what is {round_number}+{i}?", user=f"U{i:04d}"))
            headers = {"X-Line-Signature": signature(body), "Content-Type": "application/json"}
            started = time.perf_counter()
            answer = await client.post(url, content=body, headers=headers)
            assert answer.status_code == 200, answer.text
            return time.perf_counter() - started

        return list(await asyncio.gather(*(send(i) for i in range(concurrent))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--distributed", action="store_true")
    args = parser.parse_args()
    fake, server = start_fake_line()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{folder}/bench.sqlite3",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "bench-only-secret-key",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DJANGO_LOG_LEVEL": "WARNING",
            "API_THROTTLE_SEND": "100000/minute",
            "LINE_CHANNEL_SECRET": SECRET,
            "LINE_CHANNEL_ACCESS_TOKEN": "line-token",
            "LINE_API_BASE_URL": fake.url,
        }
        for name in ("REDIS_URL", "CELERY_BROKER_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
            env.pop(name, None)
        if args.distributed:  # the turns worker as deployed (Procfile): threads
            os.environ.setdefault("BENCH_WORKER_POOL", "threads")
            os.environ.setdefault("BENCH_WORKER_CONCURRENCY", "200")
            env = distributed_env(env, database="agent_platform_bench_channels", redis_db=13)
        manage(env, "migrate", "-v", "0")
        shell(env, "from agents.demo import seed_demo_agents; seed_demo_agents(); print('ok')")
        shell(env, LINK.format(users=args.concurrent))
        with Servers(env, with_worker=args.distributed) as servers:
            url = f"http://127.0.0.1:{servers.port}/channels/line/webhook"
            asyncio.run(one_round(url, 5, -1))  # warm: imports, connections
            samples: list[float] = []
            for number in range(args.rounds):
                samples += asyncio.run(one_round(url, args.concurrent, number))
            expected = args.concurrent * args.rounds + 5
            deadline = time.monotonic() + 300
            while len(fake.texts()) < expected and time.monotonic() < deadline:
                time.sleep(0.2)
    server.shutdown()
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(
        f"{args.concurrent} webhooks at once × {args.rounds}: ack p50 "
        f"{statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms; "
        f"answers delivered {len(fake.texts())}/{expected}, "
        f"{'distributed' if args.distributed else 'embedded'} (load {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
