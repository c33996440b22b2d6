"""Session memory's first write: one row per session even when another turn wrote it between
this turn's read and its insert, and the turn's transaction goes on (no error to recover from)."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction

import delegation.routing.memory as memory_module
from chat.models import ChatSession
from delegation.routing.memory import memory_after_turn
from delegation.routing.models import Mode, SessionMemory
from delegation.runs.create import run_create
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def routed_run(user):
    agent = make_agent("boss")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    run = run_create(agent=agent, user=user, session=session, task="q", transcript=[])
    run.routing = {"mode": Mode.CHAT, "matched_rule": "finance", "matched_keywords": ["budget"]}
    return run


def test_a_first_memory_is_one_insert(routed_run):
    memory_after_turn(run=routed_run, policy=None)
    saved = SessionMemory.objects.get(session_id=routed_run.session_id)
    assert saved.data["last_intent"] == "finance" and saved.data["interested_topics"] == ["budget"]


def test_a_memory_another_turn_wrote_meanwhile_is_updated_not_duplicated(routed_run, monkeypatch):
    SessionMemory.objects.create(
        session_id=routed_run.session_id,
        user_id=routed_run.user_id,
        data={"last_intent": "hr", "interested_topics": ["leave"]},
    )
    real = memory_module.memory_of
    reads = []

    def read_before_the_other_turn_wrote(**kwargs):
        reads.append(kwargs)
        return None if len(reads) == 1 else real(**kwargs)

    monkeypatch.setattr(memory_module, "memory_of", read_before_the_other_turn_wrote)
    with transaction.atomic():  # as at a turn's end: the conflict must not break it
        memory_after_turn(run=routed_run, policy=None)
        assert SessionMemory.objects.filter(session_id=routed_run.session_id).count() == 1
    saved = SessionMemory.objects.get(session_id=routed_run.session_id)
    assert saved.data["last_intent"] == "finance"
    assert saved.data["interested_topics"] == ["leave", "budget"]
