"""The demo shows routing that learns offline: seed_demo writes two weeks of statistics once,
the departments policy is advisory, and a turn in Chinese or English records the figures."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from delegation.models import RunStatus
from delegation.routing.models import Learning, RoutingPolicy, RoutingStat
from delegation.turns import turn_start

pytestmark = pytest.mark.django_db(transaction=True)


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("words", "expert"),
    [("人資的特休規定是什麼？", "hr"), ("What is our leave policy at HR?", "hr")],
)
def test_the_demo_turn_records_the_seeded_figures(user, settings, words, expert):
    settings.TASKS_RUN_SYNC = True
    assert "Routing statistics for the demo" in seed()
    rows = RoutingStat.objects.count()
    assert rows > 0 and "Routing statistics" not in seed()  # once
    assert RoutingStat.objects.count() == rows
    assert RoutingPolicy.objects.get(name="departments").learning == Learning.ADVISORY

    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=words)
    sent.run.refresh_from_db()
    assert sent.run.status == RunStatus.SUCCEEDED
    routing = sent.run.routing
    assert routing["target"] == expert and routing["intent"] == "hr"
    first = routing["learning"]["figures"][0]
    assert (first["expert"], first["intent"]) == ("hr", "hr") and first["rate"] > 80
    assert any(f["intent"] == "finance" and f["below"] for f in routing["learning"]["figures"])
