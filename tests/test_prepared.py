"""Prepared lookups: the ORM's answer (fields, related objects, deferred fields) from SQL compiled
once per connection; fresh rows every call; the row lock the queryset asks for."""

from __future__ import annotations

import threading
import time
import uuid

import psycopg
import pytest
from django.db import connection, transaction
from django.db.models import Q
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from agents.knowledge.models import KnowledgeBase
from agents.knowledge.selectors import with_knowledge_flag
from agents.models import Agent
from chat.models import ChatSession
from config.db.prepared import PreparedLookup
from delegation.models import Run, RunStatus
from delegation.runs.claim import ROOT_UNREAD, run_claim
from delegation.runs.create import run_create
from tests.databases import child_database_url
from tests.factories import make_agent, make_child_run, make_user

pytestmark = pytest.mark.django_db


def claim_queryset(run_id):
    return (
        Run.objects.select_for_update(of=("self",))
        .select_related("user", "session", "agent", "root")
        .defer(*ROOT_UNREAD)
        .filter(pk=run_id)
    )


@pytest.fixture
def child(user):
    expert = make_agent("expert")
    entry = make_agent("entry", subagents=[expert])
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=entry)
    root = run_create(agent=entry, user=user, session=session, task="q", transcript=[])
    return make_child_run(
        caller=root, target=expert, call_id="c1", prompt="ask", reason="why", max_steps=3
    )


def values(obj) -> list:
    return [getattr(obj, f.attname) for f in obj._meta.concrete_fields if f.attname in obj.__dict__]


def test_a_prepared_lookup_builds_what_the_orm_builds(child):
    lookup = PreparedLookup(claim_queryset, keys=[Run._meta.pk])
    with transaction.atomic():
        prepared = lookup.row(child.pk)
        orm = claim_queryset(child.pk).get()
    assert type(prepared) is Run and not prepared._state.adding and prepared._state.db == "default"
    for name in ("", "user", "session", "agent", "root"):
        ours = getattr(prepared, name) if name else prepared
        theirs = getattr(orm, name) if name else orm
        assert values(ours) == values(theirs), name
        assert ours.get_deferred_fields() == theirs.get_deferred_fields(), name
    assert prepared.root.get_deferred_fields() == {name[len("root__") :] for name in ROOT_UNREAD}
    # Converted as the ORM converts: JSON, UUIDs and datetimes, not the database's text.
    assert isinstance(prepared.agent_config, dict) and isinstance(prepared.root_id, uuid.UUID)
    assert prepared.deadline.tzinfo is not None


# Fields left unread, as a caller that needs only a run's state would leave them.
UNREAD = ("transcript", "references", "citations", "answer", "task", "routing_request")


def test_a_lookup_without_related_rows_defers_what_the_orm_defers(child):
    def caller(run_id):
        return Run.objects.select_for_update().defer(*UNREAD).filter(pk=run_id)

    with transaction.atomic():
        prepared = PreparedLookup(caller, keys=[Run._meta.pk]).row(child.root_id)
        orm = caller(child.root_id).get()
    assert values(prepared) == values(orm) and prepared.pk == child.root_id
    assert prepared.get_deferred_fields() == orm.get_deferred_fields() == set(UNREAD)


def test_annotations_and_a_text_key_come_out_as_the_orm_gives_them(child):
    def expert(name):
        return with_knowledge_flag(Agent.objects.select_related("access_group")).filter(name=name)

    KnowledgeBase.objects.create(name="hr", display_name="HR").agents.add(child.agent)
    lookup = PreparedLookup(expert, keys=[Agent._meta.get_field("name")])
    prepared, orm = lookup.row("expert"), expert("expert").get()
    assert values(prepared) == values(orm)
    assert prepared.linked_knowledge is orm.linked_knowledge is True
    assert lookup.row("entry").linked_knowledge is False
    assert lookup.row("nobody") is None


def test_related_objects_come_with_the_row_at_no_further_query(child):
    lookup = PreparedLookup(claim_queryset, keys=[Run._meta.pk])
    with transaction.atomic():
        lookup.row(child.pk)  # the first call on this connection compiles
        with CaptureQueriesContext(connection) as queries:
            run = lookup.row(child.pk)
            assert (run.user.username, run.session.pk, run.agent.name, run.root.depth) == (
                child.user.username,
                child.session_id,
                "expert",
                0,
            )
    assert len(queries) == 1


def test_each_connection_compiles_once_and_every_call_reads_the_row_afresh(child):
    built = []

    def counted(run_id):
        built.append(run_id)
        return claim_queryset(run_id)

    lookup = PreparedLookup(counted, keys=[Run._meta.pk])
    with transaction.atomic():
        assert lookup.row(child.pk).status == RunStatus.QUEUED
    Run.objects.filter(pk=child.pk).update(status=RunStatus.RUNNING)
    with transaction.atomic():
        assert lookup.row(child.pk).status == RunStatus.RUNNING
        assert lookup.row(child.root_id).depth == 0  # another key, same SQL
        assert lookup.row(uuid.uuid4()) is None
    assert len(built) == 1


def test_a_key_named_twice_is_given_in_both_places(child):
    either = PreparedLookup(
        lambda run_id: Run.objects.filter(Q(pk=run_id) | Q(parent_id=run_id)), keys=[Run._meta.pk]
    )
    assert {run.pk for run in either.rows(child.root_id)} == {child.pk, child.root_id}


def test_a_wrong_number_of_keys_is_a_clear_error(child):
    lookup = PreparedLookup(lambda run_id: Run.objects.filter(pk=run_id), keys=[Run._meta.pk])
    with pytest.raises(TypeError, match="expected 1 key values, got 2"):
        lookup.row(child.pk, child.root_id)
    assert lookup.row(child.pk).pk == child.pk


def test_a_key_the_queryset_never_uses_is_refused_when_compiled(child):
    unused = PreparedLookup(lambda run_id: Run.objects.filter(depth=0), keys=[Run._meta.pk])
    with pytest.raises(ValueError, match="never uses"):
        unused.row(child.pk)


def test_a_list_key_is_compiled_once_per_length_and_rows_come_in_the_orm_order(child):
    built = []

    def experts(names):
        built.append(len(names))
        return Agent.objects.filter(name__in=names).select_related("access_group")

    lookup = PreparedLookup(experts, keys=[Agent._meta.get_field("name")])
    make_agent("another")
    for names in (["expert", "entry", "another"], ["another", "nobody", "entry"], ["entry"]):
        prepared, orm = lookup.rows(names), list(experts(names))
        assert [values(a) for a in prepared] == [values(a) for a in orm]
        assert [a.name for a in prepared] == sorted(set(names) - {"nobody"})  # Agent's ordering
    # Compiled for length 3 and for length 1, once each; the other builds are the ORM's.
    assert built == [3, 3, 3, 1, 1]
    with CaptureQueriesContext(connection) as queries:
        assert lookup.rows([]) == []  # nothing can match: no query, as the ORM
    assert len(queries) == 0


def test_a_row_keeps_the_queryset_s_explicit_order(child):
    later = make_child_run(
        caller=child.root,
        target=child.agent,
        call_id="c1",
        prompt="again",
        reason="retry",
        max_steps=3,
    )
    newest = PreparedLookup(
        lambda caller, call: Run.objects.filter(
            parent_id=caller, parent_tool_call_id=call
        ).order_by("-created_at"),
        keys=[Run._meta.pk, Run._meta.get_field("parent_tool_call_id")],
    )
    assert newest.row(child.root_id, "c1").pk == later.pk
    assert newest.row(child.root_id, "c2") is None


@pytest.mark.django_db(transaction=True)  # a plain test runs inside a transaction
def test_a_lock_outside_a_transaction_is_refused_as_the_orm_refuses_it(child):
    lookup = PreparedLookup(claim_queryset, keys=[Run._meta.pk])
    if connection.features.has_select_for_update:  # Postgres
        with pytest.raises(TransactionManagementError):
            list(claim_queryset(child.pk))
        with pytest.raises(TransactionManagementError):
            lookup.row(child.pk)
    else:  # SQLite has no row locks: the ORM reads, and so do we
        assert list(claim_queryset(child.pk)) and lookup.row(child.pk).pk == child.pk


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: Postgres only")
def test_a_claim_waits_for_the_row_lock_another_worker_holds():
    """Another worker claims the run first: this claim waits on the row lock, then reads the
    other's lease and stands back (without FOR UPDATE it would read the old row and take the
    run too)."""
    user = make_user()
    agent = make_agent("solo")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    run = run_create(agent=agent, user=user, session=session, task="q", transcript=[])
    claimed = []

    def claim() -> None:
        try:
            claimed.append(run_claim(run_id=run.id)[0])  # (None: it stood back)
        finally:
            connection.close()  # this thread's own connection

    url = child_database_url()
    with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as observer:
        holder.execute(
            "UPDATE delegation_run SET status = %s, lease_token = gen_random_uuid(), "
            "lease_expires_at = now() + interval '1 minute' WHERE id = %s",
            [RunStatus.RUNNING, run.pk],
        )
        claimer = threading.Thread(target=claim)
        claimer.start()
        deadline = time.monotonic() + 10
        waiting = 0
        while not waiting and claimer.is_alive() and time.monotonic() < deadline:
            waiting = observer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            ).fetchone()[0]
            time.sleep(0.02)
        assert waiting == 1 and not claimed  # blocked behind the holder's lock
        holder.commit()
    claimer.join(10)
    assert claimed == [None]  # the other worker's run: nothing to do here


def test_a_lookup_without_a_key_reads_the_one_row_its_filters_name():
    """The entry agent (unique by a constraint) with its annotations, as the ORM gives it;
    None when no row matches; a new entry agent is found at the next call."""
    entry = PreparedLookup(
        lambda: with_knowledge_flag(Agent.objects.filter(is_entry=True, enabled=True))
    )
    assert entry.row() is None
    first = make_agent("first", is_entry=True)
    prepared = entry.row()
    orm = with_knowledge_flag(Agent.objects.filter(is_entry=True, enabled=True)).get()
    assert values(prepared) == values(orm) and prepared.pk == first.pk
    assert prepared.linked_knowledge is orm.linked_knowledge is False
    Agent.objects.filter(pk=first.pk).update(is_entry=False)
    second = make_agent("second", is_entry=True)
    assert entry.row().pk == second.pk
