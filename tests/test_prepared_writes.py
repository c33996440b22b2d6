"""Prepared writes: the row the ORM's update(), create() and bulk_create() upsert leave, from SQL
compiled once per connection; values by name, in filters and expressions too; errors as the ORM
raises them."""

from __future__ import annotations

import sys
import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F, signals
from django.db.models.constants import OnConflict
from django.db.models.functions import Greatest
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageRole, MessageStatus
from config.db import SameAs
from config.db.prepared import Param, PreparedInsert, PreparedSave, PreparedUpdate
from delegation.humans.models import Activity, ActivityKind
from delegation.models import Run, RunStatus
from delegation.routing.models import SessionMemory
from delegation.runs.create import run_create
from delegation.runs.fenced import HEARTBEAT, PROGRESS, held, working
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


def field(name):
    return Run._meta.get_field(name)


@pytest.fixture
def runs(user):
    agent = make_agent("solo")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    made = [
        run_create(agent=agent, user=user, session=session, task="q", transcript=[])
        for _ in range(2)
    ]
    for run in made:
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.RUNNING, lease_token=uuid.uuid4(), last_seq=5, tree_model_calls=10
        )
    return [Run.objects.get(pk=r.pk) for r in made]


def saved(run):
    """The run's row as the database has it, but for what tells two runs apart."""
    row = Run.objects.filter(pk=run.pk).values().get()
    return {
        k: v
        for k, v in row.items()
        if k not in {"id", "lease_token", "created_at", "queued_at", "deadline"}
    }


def by_token():
    return Run.objects.filter(
        SameAs(F("lease_token"), Param("token", field("lease_token"))),
        pk=Param("id", Run._meta.pk),
    )


def test_an_update_leaves_the_row_the_orm_leaves(runs):
    ours, theirs = runs
    at = timezone.now() + timedelta(minutes=3)
    values = dict(
        transcript=[{"role": "user", "content": "你好 \u2028 ok"}],
        usage={"cost": "0.10"},
        lease_expires_at=at,
        error=None,
        answer="done",
    )
    statement = PreparedUpdate(
        lambda: (
            by_token(),
            {
                **{name: Param(name, field(name)) for name in values},
                "tree_model_calls": F("tree_model_calls")
                + Param("calls", field("tree_model_calls")),
                "last_seq": Greatest("last_seq", Param("seq", field("last_seq"))),
            },
        )
    )
    assert statement.run(id=ours.pk, token=ours.lease_token, calls=7, seq=3, **values) == 1
    Run.objects.filter(pk=theirs.pk, lease_token=theirs.lease_token).update(
        **values, tree_model_calls=F("tree_model_calls") + 7, last_seq=Greatest("last_seq", 3)
    )
    assert saved(ours) == saved(theirs)
    ours.refresh_from_db()
    assert (ours.tree_model_calls, ours.last_seq, ours.lease_expires_at) == (17, 5, at)
    assert ours.transcript == values["transcript"] and ours.error is None


def test_filters_take_their_values_per_call_and_none_matches_null_as_the_orm(runs):
    run, other = runs
    statement = PreparedUpdate(lambda: (by_token(), {"answer": Param("answer", field("answer"))}))
    assert statement.run(id=run.pk, token=uuid.uuid4(), answer="no") == 0  # not its lease
    assert statement.run(id=run.pk, token=other.lease_token, answer="no") == 0
    assert statement.run(id=run.pk, token=None, answer="no") == 0
    assert statement.run(id=run.pk, token=run.lease_token, answer="yes") == 1
    Run.objects.filter(pk=other.pk).update(lease_token=None)
    assert statement.run(id=other.pk, token=None, answer="null") == 1  # IS NULL, as the ORM
    assert Run.objects.filter(pk=other.pk, lease_token=None).update(answer="null") == 1
    assert [Run.objects.get(pk=r.pk).answer for r in runs] == ["yes", "null"]


def test_a_save_of_some_fields_writes_the_row_its_key_names(runs):
    answer = PreparedSave(Run, "answer", "worker")
    runs[0].answer, runs[0].worker = "a", "w"
    assert answer.save(runs[0]) == 1
    assert answer.save(Run(pk=uuid.uuid4(), answer="b", worker="w")) == 0
    saved_run = Run.objects.get(pk=runs[0].pk)
    assert (saved_run.answer, saved_run.worker) == ("a", "w")
    assert Run.objects.get(pk=runs[1].pk).answer == ""


def test_a_statement_is_compiled_once_per_connection(runs):
    built = []

    def build():
        built.append(1)
        return by_token(), {"worker": Param("worker", field("worker"))}

    statement = PreparedUpdate(build)
    for name in ("a", "b", "c"):
        with CaptureQueriesContext(connection) as queries:
            statement.run(id=runs[0].pk, token=runs[0].lease_token, worker=name)
        assert len(queries) == 1 and "UPDATE" in queries[0]["sql"]
    assert len(built) == 1 and Run.objects.get(pk=runs[0].pk).worker == "c"


def test_a_value_missing_or_never_used_is_a_clear_error(runs):
    statement = PreparedUpdate(lambda: (by_token(), {"worker": Param("worker", field("worker"))}))
    with pytest.raises(ValueError, match="never uses"):
        statement.run(id=runs[0].pk, token=runs[0].lease_token, worker="w", answer="x")
    statement.run(id=runs[0].pk, token=runs[0].lease_token, worker="w")
    with pytest.raises(TypeError, match=r"no value given for \['worker'\]"):
        statement.run(id=runs[0].pk, token=runs[0].lease_token)


def test_a_failed_update_marks_its_transaction_for_rollback_as_the_orm(runs):
    statement = PreparedUpdate(lambda: (by_token(), {"last_seq": Param("seq", field("last_seq"))}))
    with transaction.atomic():
        with pytest.raises(IntegrityError):  # a positive integer's check
            statement.run(id=runs[0].pk, token=runs[0].lease_token, seq=-1)
        # Marked: the block's end rolls back instead of committing (a savepoint here).
        assert transaction.get_rollback()
    assert Run.objects.get(pk=runs[0].pk).last_seq == 5


def test_the_fence_refuses_a_worker_whose_lease_was_taken(runs):
    run = runs[0]
    assert HEARTBEAT.run(**held(run), lease_expires_at=timezone.now(), last_seq=9) == 1
    run.transcript, run.last_seq = [{"role": "assistant", "content": "so far"}], 9
    values = dict(routing=None, lease_expires_at=timezone.now())
    assert PROGRESS.run(**held(run), **working(run), **values) == 1
    Run.objects.filter(pk=run.pk).update(lease_token=uuid.uuid4())  # another worker took it
    assert HEARTBEAT.run(**held(run), lease_expires_at=timezone.now(), last_seq=99) == 0
    assert PROGRESS.run(**held(run), **working(run), **values) == 0
    saved_run = Run.objects.get(pk=run.pk)
    assert saved_run.last_seq == 9 and saved_run.transcript == run.transcript


def row(obj):
    """A row as the database has it, but for what tells two rows apart."""
    values = type(obj).objects.filter(pk=obj.pk).values().get()
    return {k: v for k, v in values.items() if k not in {"id", "created_at", "updated_at"}}


def test_an_insert_writes_the_row_create_writes_and_reads_its_new_key_back(runs):
    run = runs[0]
    values = dict(
        kind=ActivityKind.DELEGATION_ANSWERED,
        summary="專家 → 助理: ok",
        run=run,
        root_id=run.pk,
        user_id=run.user_id,
        data={"status": "succeeded", "量": [1, 2]},
    )
    inserter = PreparedInsert(Activity)
    with CaptureQueriesContext(connection) as queries:
        ours = inserter.insert(Activity(**values))
        again = inserter.insert(Activity(**values))
    theirs = Activity.objects.create(**values)
    assert [q["sql"].split(None, 1)[0] for q in queries] == ["INSERT", "INSERT"]
    assert isinstance(ours.pk, int) and again.pk > ours.pk and not ours._state.adding
    assert row(ours) == row(theirs) and ours.created_at is not None  # auto_now_add applied
    assert Activity.objects.get(pk=ours.pk).data == values["data"]


def message(session, content, status=MessageStatus.STREAMING, **more):
    return ChatMessage(
        id=more.pop("id", uuid.uuid4()),
        session=session,
        role=MessageRole.AGENT,
        content=content,
        status=status,
        **more,
    )


def test_an_upsert_updates_the_fields_it_names_as_bulk_create_does(runs):
    session = runs[0].session
    upsert = PreparedInsert(
        ChatMessage,
        on_conflict=OnConflict.UPDATE,
        unique_fields=["id"],
        update_fields=["content", "status", "updated_at"],
    )
    first = upsert.insert(message(session, "so far"))
    kept = ChatMessage.objects.get(pk=first.pk)
    replay = message(session, "whole", MessageStatus.COMPLETED, id=first.pk, model="other")
    upsert.insert(replay)
    theirs = message(session, "so far")
    ChatMessage.objects.bulk_create([theirs])
    ChatMessage.objects.bulk_create(
        [message(session, "whole", MessageStatus.COMPLETED, id=theirs.pk, model="other")],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["content", "status", "updated_at"],
    )
    ours = ChatMessage.objects.get(pk=first.pk)
    assert row(ours) == row(theirs) and (ours.content, ours.model) == ("whole", "")
    assert ours.created_at == kept.created_at and ours.updated_at > kept.updated_at


def test_an_insert_that_ignores_conflicts_leaves_the_row_as_it_was(runs):
    session = runs[0].session
    ignore = PreparedInsert(ChatMessage, on_conflict=OnConflict.IGNORE)
    first = ignore.insert(message(session, "closed", MessageStatus.COMPLETED))
    ignore.insert(message(session, "late", id=first.pk))
    saved_message = ChatMessage.objects.get(pk=first.pk)
    assert (saved_message.content, saved_message.status) == ("closed", MessageStatus.COMPLETED)


def test_an_ignored_insert_of_a_numbered_row_leaves_it_without_a_key(runs):
    run = runs[0]
    memory = PreparedInsert(SessionMemory, on_conflict=OnConflict.IGNORE)
    first = memory.insert(SessionMemory(session_id=run.session_id, user_id=run.user_id))
    again = memory.insert(SessionMemory(session_id=run.session_id, user_id=run.user_id, data={}))
    assert isinstance(first.pk, int) and again.pk is None  # one memory per session: ignored
    assert SessionMemory.objects.filter(session_id=run.session_id).count() == 1


def test_no_model_the_code_inserts_prepared_has_save_receivers(runs):
    # A prepared insert sends no save signals: a receiver of one of these models would never
    # hear of those rows (evals pin an expert's draft through the engine's hook instead).
    models = {
        value.model
        for name, module in list(sys.modules.items())
        if name.split(".")[0] in ("agents", "chat", "config", "delegation", "reminders")
        for value in vars(module).values()
        if isinstance(value, PreparedInsert)
    }
    assert {Run, ChatMessage, Activity} <= models
    for model in models:
        assert not signals.pre_save.has_listeners(model), model
        assert not signals.post_save.has_listeners(model), model


def test_an_expression_value_is_refused(runs):
    inserter = PreparedInsert(Activity)
    inserter.insert(Activity(kind=ActivityKind.DELEGATION_ANSWERED, summary="x"))
    with pytest.raises(TypeError, match="not expressions"):
        inserter.insert(Activity(kind=ActivityKind.DELEGATION_ANSWERED, summary=F("kind")))
