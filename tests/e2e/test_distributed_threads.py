"""One worker process on the threads pool runs many delegated turns at once: their experts'
model streams are open together, and each run still ends once, with one answer each."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from chat.models import ChatMessage
from config.celery_app import app
from delegation.models import FINAL_STATUSES, Run, RunStatus
from delegation.turns import turn_start
from tests.delegation.conftest import make_team
from tests.fake_openai import Reply, Team, delegate, text
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

TURNS = 6


def test_one_threads_worker_streams_several_delegated_turns_at_once(workers, user, fake_openai):
    make_team(boss=["expert"], expert=[])
    team = Team(fake_openai)
    together = threading.Barrier(TURNS)

    def boss(body: dict[str, Any]) -> Reply:
        asked = body["messages"][-1]["role"] == "user"
        return delegate("expert", "help") if asked else text("boss ", "done")

    def expert(body: dict[str, Any]) -> Reply:
        together.wait(timeout=60)  # every expert is streaming at once, or none answers
        return text("expert ", "answer")

    team.always.update(boss=boss, expert=expert)
    env = {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MAX_RETRIES": "0",
        "OPENAI_TIMEOUT": "90",
    }
    workers.start("w1", pool="threads", concurrency=TURNS + 2, **env)
    pools = [stats["pool"] for stats in app.control.inspect(timeout=5).stats().values()]
    assert [pool["implementation"] for pool in pools] == ["celery.concurrency.thread:TaskPool"]

    roots = [
        turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="go").run
        for _ in range(TURNS)
    ]
    ids = [root.id for root in roots if root is not None]
    wait_until(
        lambda: Run.objects.filter(id__in=ids, status__in=FINAL_STATUSES).count() == TURNS,
        timeout=120,
        what="every turn ended",
    )

    assert not together.broken  # the experts' TURNS model calls were all open at once
    runs = Run.objects.all()
    assert [(r.parent_id is None, r.status, r.answer) for r in runs.order_by("depth")] == [
        (True, RunStatus.SUCCEEDED, "boss done")
    ] * TURNS + [(False, RunStatus.SUCCEEDED, "expert answer")] * TURNS
    assert sorted(r.parent_id for r in runs.filter(depth=1)) == sorted(ids)
    # Each model was called as often as once per run and step: no delivery ran a step twice.
    assert len(team.requests["expert"]) == TURNS and len(team.requests["boss"]) == 2 * TURNS
    for root in roots:
        assert root is not None
        messages = ChatMessage.objects.filter(session_id=root.session_id).order_by("created_at")
        assert [(m.role, (m.agent or {}).get("name"), m.content) for m in messages] == [
            ("user", None, "go"),
            ("tool", "boss", ""),
            ("agent", "expert", "expert answer"),
            ("agent", "boss", "boss done"),
        ]
