"""Routing statistics on Postgres under concurrency: turns running at once each count their
delegation once, and users' ratings racing on one answer leave counts equal to the ratings."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection

from agents.models import Agent
from chat.feedback import feedback_set
from chat.models import ChatMessage, MessageFeedback, MessageRole
from delegation.models import Run, RunStatus
from delegation.routing.models import RoutingStat
from delegation.routing.seeds import routing_seed
from delegation.turns import turn_start
from tests.delegation.conftest import make_team
from tests.fake_openai import text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent writers: Postgres"),
]

TURNS = 6


def at_once(count: int, work) -> list[BaseException]:
    """Run `work(n)` in `count` threads released together; the errors they raised."""
    barrier, errors = threading.Barrier(count), []

    def body(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            work(n)
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


@pytest.fixture
def departments(settings, team):
    settings.TASKS_RUN_SYNC = True
    make_team(boss=["finance", "hr"], finance=[], hr=[])
    routing_seed(name="departments", entry_agents=[Agent.objects.get(name="boss")])
    team.always["finance"] = lambda body: text("Revenue is up.")
    return team


def test_concurrent_turns_each_count_their_delegation_once(user, departments):
    def one_turn(n: int) -> None:
        turn_start(
            user=user,
            session_id=uuid.uuid4(),
            message_id=uuid.uuid4(),
            text=f"What does finance say about revenue in region {n}?",
        )

    assert at_once(TURNS, one_turn) == []
    experts = Run.objects.filter(depth=1)
    assert experts.count() == TURNS
    assert set(experts.values_list("status", flat=True)) == {RunStatus.SUCCEEDED}
    row = RoutingStat.objects.get(entry="boss", expert="finance", intent="finance")
    assert (row.delegations, row.succeeded) == (TURNS, TURNS)


def test_racing_ratings_leave_counts_equal_to_the_ratings(user, departments, other_user):
    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="finance?")
    answer = ChatMessage.objects.filter(run__depth=0, role=MessageRole.AGENT).last()
    for _round in range(5):
        # The same user's first rating twice at once (both may try to create it), then a
        # change racing another change.
        MessageFeedback.objects.all().delete()
        RoutingStat.objects.update(rated_up=0, rated_down=0)
        assert at_once(2, lambda n: feedback_set(user=user, message=answer, rating=1)) == []
        assert (
            at_once(2, lambda n: feedback_set(user=user, message=answer, rating=(-1, 1)[n])) == []
        )
        final = MessageFeedback.objects.get(message=answer).rating
        row = RoutingStat.objects.get(entry="boss", expert="finance", intent="finance")
        assert (row.rated_up, row.rated_down) == ((1, 0) if final == 1 else (0, 1))
