"""Routing decision latency: the shipped rule sets alone, and with the router model (the real
`openai` client against the zero-latency fake server), then with routing learning off, advisory
and on over a month of statistics (SQL statements per decision too). Prints a table; never a
timed test.

    .venv/bin/python bench/routing.py [--decisions N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_DEBUG", "true")
os.environ["DATABASE_URL"] = "sqlite:////tmp/agent-platform-bench-routing.sqlite3"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from config.periodic import prevent_start  # noqa: E402

MESSAGES = [
    "請嚴格根據文件回答：公司有幾個部門？",
    "人資的特休規定是什麼？",
    "What is our travel budget policy?",
    "這份合約的保密條款",
    "Who should I talk to about my new colleague?",  # no rule: the router decides
    "嗨",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=600)
    args = parser.parse_args()
    prevent_start()
    Path("/tmp/agent-platform-bench-routing.sqlite3").unlink(missing_ok=True)
    call_command("migrate", verbosity=0)

    from agents.models import Agent
    from delegation.routing.decide import RoutingInput, routing_decide
    from delegation.routing.seeds import routing_seed
    from delegation.runs.create import pinned_config
    from tests.factories import make_agent
    from tests.fake_openai import FakeOpenAI, text

    experts = [
        make_agent("finance", tags=["finance"]),
        make_agent("hr", tags=["hr"]),
        make_agent("legal", tags=["legal"]),
    ]
    entry = make_agent("assistant", is_entry=True, provider="openai", model="fake")
    entry.allowed_subagents.set(experts)
    policy = routing_seed(name="departments", entry_agents=[entry])
    config = pinned_config(Agent.objects.get(pk=entry.pk))

    fake = FakeOpenAI().start()
    fake.fallback = lambda body: text('{"target": "hr", "reason": "people"}')
    from django.conf import settings

    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = fake.base_url, "x"
    _month_of_statistics(entry="assistant", experts=[e.name for e in experts])
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    rows = []
    for label, router, learning in (
        ("rules only", False, "off"),
        ("rules + router model", True, "off"),
        ("  learning advisory", True, "advisory"),
        ("  learning on", True, "on"),
    ):
        policy.router_enabled, policy.learning = router, learning
        samples, routed = [], 0
        with CaptureQueriesContext(connection) as queries:
            for index in range(args.decisions):
                message = MESSAGES[index % len(MESSAGES)]
                started = time.perf_counter()
                decision = routing_decide(
                    RoutingInput(text=message, policy=policy, entry=config, targets=experts)
                )
                samples.append((time.perf_counter() - started) * 1000)
                routed += decision.router_latency_ms is not None
        samples.sort()
        p50, p99 = samples[len(samples) // 2], samples[int(len(samples) * 0.99)]
        rows.append((label, p50, p99, routed, len(queries) / args.decisions))
    fake.stop()
    print(f"routing decisions: {args.decisions} per row, {len(MESSAGES)} messages in turn")
    print(f"{'':24} {'p50 ms':>8} {'p99 ms':>8} {'router calls':>13} {'SQL/decision':>13}")
    for label, p50, p99, routed, sql in rows:
        print(f"{label:24} {p50:8.2f} {p99:8.2f} {routed:13d} {sql:13.2f}")
    print(f"routing_rules_p50_ms={rows[0][1]:.2f}")
    print(f"routing_router_p50_ms={rows[1][1]:.2f}")
    print(f"routing_learning_on_p50_ms={rows[3][1]:.2f}")


def _month_of_statistics(*, entry: str, experts: list[str]) -> None:
    """30 days of counters for each expert and intent (and two other entry agents' rows the
    read skips), as a month of traffic leaves them."""
    from datetime import timedelta

    from django.utils import timezone

    from delegation.routing.models import RoutingStat

    today = timezone.now().date()
    RoutingStat.objects.bulk_create(
        RoutingStat(
            entry=who,
            expert=expert,
            intent=intent,
            day=today - timedelta(days=back),
            delegations=5,
            succeeded=5,
            validation_passed=3 + (back % 2),
            validation_failed=1,
        )
        for who in (entry, "site", "helpdesk")
        for expert in experts
        for intent in ("finance", "hr", "legal", "none")
        for back in range(30)
    )


if __name__ == "__main__":
    main()
