"""SQL per turn: a direct turn and a delegation hop stay within their query budgets (with tasks run
inline, and as a worker's task body runs them), and a turn's queries do not grow with the
session's history (10 or 500 earlier messages cost the same)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageRole, MessageStatus
from config import enqueue
from delegation.models import Run, RunStatus
from delegation.tasks import advance_run
from delegation.turns import turn_start
from tests.delegation.conftest import make_team
from tests.fake_openai import delegate, text

pytestmark = pytest.mark.django_db(transaction=True)

# The most SQL statements one more level of delegation may add to a turn (the expert's run from
# creation to answer, its caller's wait, resumption and new claim, as in a deployment: a step
# that asks experts saves its wait in the same commit as their runs, so even tasks run inline
# find the caller waiting), transaction statements left out. A ratchet: lower it when a change
# saves queries (docs/decisions/0006-performance.md, "The trade"). (22: the expert's end counts
# its delegation in routing's statistics, one upsert in the end's commit.)
HOP_QUERY_BUDGET = 22
# The most a depth-0 turn (sent, routed, one model call, answered) may run, the same way.
TURN_QUERY_BUDGET = 18
# The same hop as a worker runs it: the expert, then its resumed caller, handed over to the
# task body that made them ready, whose claims read nothing (delegation.runs.claim._ready). Any
# level: a turn's tokens are its ledger's, so an expert's end writes nothing on the root (docs/
# runs.md has the hop's statements, one by one).
WORKER_HOP_QUERY_BUDGET = 18
# What a turn in a session with history may add to that (whether a turn is running, the recent
# history: the session's own agent is read with what a run pins of it, in one statement).
SESSION_QUERY_BUDGET = 2


def fake_team(body: dict) -> object:
    """The entry agent delegates while the message asks for depth 1, the expert answers."""
    me = body["messages"][0]["content"]
    last = body["messages"][-1]
    if me.startswith("You are lead.") and last["role"] == "user" and "depth=1" in last["content"]:
        return delegate("expert", "look it up")
    return text("The ", "answer.")


@pytest.fixture
def lead(fake_openai, settings, user):
    """lead → expert on the fake server; tasks run inline so one connection sees every query."""
    settings.TASKS_RUN_SYNC = True
    fake_openai.fallback = fake_team
    return make_team(lead=["expert"], expert=[])["lead"]


def turn_queries(user, text_: str, session_id: uuid.UUID | None = None) -> int:
    """Statements of one whole turn (sent, routed, answered), BEGIN/COMMIT left out."""
    with CaptureQueriesContext(connection) as captured:
        sent = turn_start(
            user=user, session_id=session_id or uuid.uuid4(), message_id=uuid.uuid4(), text=text_
        )
    sent.run.refresh_from_db()
    assert sent.run.status == RunStatus.SUCCEEDED, sent.run.error
    return sum(
        1
        for q in captured.captured_queries
        if q["sql"].split(None, 1)[0].upper() not in {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}
    )


def session_with_history(user, agent, turns: int) -> uuid.UUID:
    """A session of `turns` finished turns (a question and an answer each) written directly."""
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent, title="old")
    start = timezone.now() - timedelta(days=1)
    questions, runs, answers = [], [], []
    for n in range(turns):
        asked = ChatMessage(
            id=uuid.uuid4(), session=session, role=MessageRole.USER, content=f"question {n}"
        )
        run = Run(
            session=session,
            user=user,
            agent=agent,
            agent_version=1,
            agent_config={"name": agent.name},
            user_message=asked,
            task=f"question {n}",
            status=RunStatus.SUCCEEDED,
            answer=f"answer {n}",
            deadline=start,
        )
        questions.append(asked)
        runs.append(run)
        answers.append(
            ChatMessage(
                id=uuid.uuid4(),
                session=session,
                role=MessageRole.AGENT,
                run=run,
                content=f"answer {n}",
                status=MessageStatus.COMPLETED,
            )
        )
    ChatMessage.objects.bulk_create(questions)
    Run.objects.bulk_create(runs)
    ChatMessage.objects.bulk_create(answers)
    return session.id


def test_one_more_level_of_delegation_stays_within_the_hop_budget(lead, user):
    turn_queries(user, "warm up depth=0")  # first-use lookups (content types, prices) are not a hop
    direct = turn_queries(user, "go depth=0")
    delegated = turn_queries(user, "go depth=1")
    assert Run.objects.filter(depth=1, status=RunStatus.SUCCEEDED).count() == 1
    print(f"queries: direct turn {direct}, one more level {delegated - direct}")
    assert 0 < direct <= TURN_QUERY_BUDGET, direct
    assert 0 < delegated - direct <= HOP_QUERY_BUDGET, (direct, delegated)


def test_a_turn_costs_the_same_queries_after_10_or_500_messages(lead, user):
    short = session_with_history(user, lead, turns=5)
    long = session_with_history(user, lead, turns=250)
    assert ChatMessage.objects.filter(session_id=long).count() == 500
    turn_queries(user, "warm up depth=1")
    in_short, in_long = (
        turn_queries(user, "go depth=1", short),
        turn_queries(user, "go depth=1", long),
    )
    print(f"queries: a depth-1 turn in a session with history {in_short}")
    assert in_short == in_long
    # A session's turn also reads whether a turn is running and the recent history.
    assert in_short <= TURN_QUERY_BUDGET + HOP_QUERY_BUDGET + SESSION_QUERY_BUDGET, in_short
    # The long session's model request carried only the recent turns, not all 250.
    assert ChatMessage.objects.filter(session_id=long).count() == 500 + 1 + 2 + 1


def worker_queries(user, text_: str, published: list) -> int:
    """Statements a worker's task body runs for one whole turn (BEGIN/COMMIT left out)."""
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text_)
    assert published.pop() == (str(sent.run.pk),)
    with CaptureQueriesContext(connection) as captured:
        assert advance_run.run(str(sent.run.pk)) == RunStatus.SUCCEEDED
    assert published == []  # the expert and its caller ran in that task body, one after another
    return sum(
        1
        for q in captured.captured_queries
        if q["sql"].split(None, 1)[0].upper() not in {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}
    )


def test_a_hop_as_a_worker_runs_it_stays_within_its_budget(lead, user, settings, monkeypatch):
    settings.TASKS_RUN_SYNC = False  # a worker's task body, its work published to a queue
    settings.CELERY_BROKER_URL = ""
    published: list = []
    monkeypatch.setattr(enqueue, "_publish", lambda task, args: published.append(args))
    worker_queries(user, "warm up depth=0", published)
    direct = worker_queries(user, "go depth=0", published)
    delegated = worker_queries(user, "go depth=1", published)
    print(f"queries in a worker: direct turn {direct}, one more level {delegated - direct}")
    assert 0 < delegated - direct <= WORKER_HOP_QUERY_BUDGET, (direct, delegated)


def deeper_team(body: dict) -> object:
    """lead → mid while the question asks for depth 1 or 2; mid → leaf for depth 2."""
    me = body["messages"][0]["content"]
    last = body["messages"][-1]
    if last["role"] != "user":
        return text("The ", "answer.")
    if me.startswith("You are lead.") and "depth=0" not in last["content"]:
        return delegate("mid", last["content"])
    if me.startswith("You are mid.") and "depth=2" in last["content"]:
        return delegate("leaf", "look it up")
    return text("The ", "answer.")


def test_a_second_hop_as_a_worker_runs_it_stays_within_its_budget(
    fake_openai, user, settings, monkeypatch
):
    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = ""
    published: list = []
    monkeypatch.setattr(enqueue, "_publish", lambda task, args: published.append(args))
    fake_openai.fallback = deeper_team
    make_team(lead=["mid"], mid=["leaf"], leaf=[])
    worker_queries(user, "warm up depth=1", published)
    direct = worker_queries(user, "go depth=0", published)
    one = worker_queries(user, "go depth=1", published)
    two = worker_queries(user, "go depth=2", published)
    print(f"queries in a worker: a hop to an expert with its own {one - direct}, next {two - one}")
    # Its experts were read with the lead's (delegation.tree.guards): a hop as to one without.
    assert 0 < one - direct <= WORKER_HOP_QUERY_BUDGET, (direct, one)
    assert 0 < two - one <= WORKER_HOP_QUERY_BUDGET, (one, two)
