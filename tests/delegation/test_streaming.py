"""A streaming message's checkpoints: text so far, lease and event number saved together in one
transaction, by the process's checkpoint thread (or by the stream itself inside a transaction);
a run stopped meanwhile saves nothing and stops the stream; a closed message is never reopened."""

from __future__ import annotations

import time
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageStatus
from delegation.models import Run, RunStatus
from delegation.runs.checkpoints import checkpoints
from delegation.runs.claim import run_claim
from delegation.runs.create import run_create
from delegation.runs.emitter import RunEmitter
from delegation.runs.ended import run_mark_ended
from delegation.runs.writes import RunStopped, run_heartbeat
from delegation.steps import streaming
from delegation.steps.streaming import MessageStream
from tests.factories import make_agent
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def stream(user, monkeypatch) -> MessageStream:
    """A stream of a claimed run that checkpoints at every piece of text."""
    monkeypatch.setattr(streaming, "PERSIST_INTERVAL", 0)
    return new_stream(user)


def new_stream(user) -> MessageStream:
    agent = make_agent("solo")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    created = run_create(agent=agent, user=user, session=session, task="q", transcript=[])
    claimed, _ = run_claim(run_id=created.pk, worker="w")
    return MessageStream(RunEmitter(claimed.run), uuid.uuid4(), "offline")


def saved(stream: MessageStream) -> tuple[str, str]:
    return ChatMessage.objects.values_list("content", "status").get(pk=stream.message_id)


def test_text_so_far_lease_and_event_number_are_saved_in_one_commit(stream):
    stream.add("Hello")
    run = Run.objects.get(pk=stream.emitter.run.pk)
    before = run.lease_expires_at
    with CaptureQueriesContext(connection) as queries:
        stream.add(", world")
    run.refresh_from_db()
    assert saved(stream) == ("Hello, world", MessageStatus.STREAMING)
    assert run.lease_expires_at > before
    assert run.last_seq == stream.emitter.seq
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert statements.count("UPDATE") == 2
    assert statements.count("COMMIT") + statements.count("RELEASE") == 1, statements


def test_a_run_stopped_meanwhile_saves_nothing_more(stream):
    stream.add("Hello")
    Run.objects.filter(pk=stream.emitter.run.pk).update(status=RunStatus.CANCELLED)
    with pytest.raises(RunStopped):
        stream.add(", world")
    assert saved(stream) == ("Hello", MessageStatus.STREAMING)


def test_a_message_closed_by_its_runs_end_is_never_reopened(stream):
    stream.add("Hello")
    ChatMessage.objects.filter(pk=stream.message_id).update(status=MessageStatus.CANCELLED)
    stream.add(", world")  # the lease is still ours here: only the message was closed
    assert saved(stream) == ("Hello", MessageStatus.CANCELLED)


def test_nul_characters_are_dropped_from_saved_text(stream):
    stream.add("a\x00b")
    stream.add("c")
    assert saved(stream)[0] == "abc"


def test_the_event_number_saved_never_goes_back(stream):
    run = stream.emitter.run
    Run.objects.filter(pk=run.pk).update(last_seq=10)
    run_heartbeat(run=run, seq=4)  # a checkpoint landing after its step's own save
    assert Run.objects.get(pk=run.pk).last_seq == 10
    run_heartbeat(run=run, seq=12)
    assert Run.objects.get(pk=run.pk).last_seq == 12


# Outside a transaction (as a worker streams), the checkpoint thread writes: the stream only
# hands its text over. `flush()` waits for every offer made before it.


@pytest.mark.django_db(transaction=True)
def test_the_checkpoint_thread_saves_the_text_the_lease_and_the_event_number(user, monkeypatch):
    monkeypatch.setattr(streaming, "PERSIST_INTERVAL", 0)
    stream = new_stream(user)
    before = Run.objects.get(pk=stream.emitter.run.pk).lease_expires_at
    with CaptureQueriesContext(connection) as queries:
        stream.add("Hello")
        stream.add(", world")
    assert not any(q["sql"].startswith("UPDATE") for q in queries.captured_queries)
    checkpoints().flush()
    run = Run.objects.get(pk=stream.emitter.run.pk)
    assert saved(stream) == ("Hello, world", MessageStatus.STREAMING)
    assert run.lease_expires_at > before
    assert run.last_seq == stream.emitter.seq


@pytest.mark.django_db(transaction=True)
def test_a_run_lost_meanwhile_keeps_no_text_and_stops_the_stream(user, monkeypatch):
    monkeypatch.setattr(streaming, "PERSIST_INTERVAL", 0)
    stream = new_stream(user)
    stream.add("Hello")
    checkpoints().flush()
    Run.objects.filter(pk=stream.emitter.run.pk).update(lease_token=uuid.uuid4())  # taken over
    stream.add(", world")
    checkpoints().flush()
    assert saved(stream) == ("Hello", MessageStatus.STREAMING)
    with pytest.raises(RunStopped):
        stream.add("!")


@pytest.mark.django_db(transaction=True)
def test_nothing_a_stream_offered_overwrites_its_end(user, monkeypatch):
    monkeypatch.setattr(streaming, "PERSIST_INTERVAL", 0)
    stream = new_stream(user)
    stream.add("Hel")
    offered = stream._checkpoint
    stream.add("lo")
    stream.complete(usage={})  # withdraws its offer; one taken just before must not win either
    checkpoints().offer(offered, "Hel", 0)
    checkpoints().flush()
    assert saved(stream) == ("Hello", MessageStatus.COMPLETED)


# A stream's start saves nothing: its first checkpoint creates the row, or its end does.


@pytest.fixture
def unsaved(user, monkeypatch, settings) -> MessageStream:
    """A stream whose checkpoint never comes (an answer shorter than the interval); every
    piece of text is sent at once."""
    monkeypatch.setattr(streaming, "PERSIST_INTERVAL", 3600)
    settings.EVENT_COALESCE_MS = 0
    return new_stream(user)


def test_a_short_answer_is_written_once_at_its_end_dated_from_its_start(unsaved):
    unsaved.add("Hello")
    assert not ChatMessage.objects.filter(pk=unsaved.message_id).exists()
    before_its_end = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        unsaved.complete(usage={})
    writes = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert [w for w in writes if w in ("INSERT", "UPDATE")] == ["INSERT"]
    message = ChatMessage.objects.get(pk=unsaved.message_id)
    assert (message.content, message.status) == ("Hello", MessageStatus.COMPLETED)
    assert message.created_at < before_its_end < message.updated_at


def test_the_first_checkpoint_creates_the_message_streaming_dated_from_its_start(stream):
    before = timezone.now()
    stream.add("Hel")
    message = ChatMessage.objects.get(pk=stream.message_id)
    assert (message.content, message.status, message.run_id) == (
        "Hel",
        MessageStatus.STREAMING,
        stream.emitter.run.pk,
    )
    assert before <= message.created_at <= message.updated_at
    stream.add("lo")
    assert saved(stream) == ("Hello", MessageStatus.STREAMING)


@pytest.mark.django_db(transaction=True)
def test_a_first_checkpoint_landing_after_the_end_creates_nothing_and_changes_nothing(unsaved):
    unsaved.add("Hello")
    offered = unsaved._checkpoint
    unsaved.complete(usage={})
    checkpoints().offer(offered, "Hel", 0)  # taken by the thread just before the end withdrew it
    checkpoints().flush()
    assert saved(unsaved) == ("Hello", MessageStatus.COMPLETED)


def test_words_shown_before_any_save_are_kept_closed_when_the_run_was_stopped(unsaved):
    unsaved.add("Hello")
    Run.objects.filter(pk=unsaved.emitter.run.pk).update(status=RunStatus.CANCELLED)
    unsaved.keep_text()
    assert saved(unsaved) == ("Hello", MessageStatus.CANCELLED)


def test_a_run_taken_over_before_any_save_leaves_no_message(unsaved):
    unsaved.add("Hello")
    Run.objects.filter(pk=unsaved.emitter.run.pk).update(lease_token=uuid.uuid4())
    unsaved.keep_text()  # its new worker redoes the step, under the same message id
    assert not ChatMessage.objects.filter(pk=unsaved.message_id).exists()


def test_a_failing_call_saves_its_words_for_the_end_to_close(unsaved):
    unsaved.add("Hello")
    unsaved.persist()
    assert saved(unsaved) == ("Hello", MessageStatus.STREAMING)


@pytest.mark.django_db(transaction=True)
def test_a_stream_that_stalls_before_its_first_checkpoint_is_saved_all_the_same(user, monkeypatch):
    """The thread writes an offer once it is due, without waiting for more text: a model that
    pauses after its first words has them saved (and its run's lease renewed)."""
    monkeypatch.setattr(streaming, "PERSIST_INTERVAL", 0.05)
    stream = new_stream(user)
    stream.add("Partial ")  # and nothing more for now
    for _ in range(100):
        if ChatMessage.objects.filter(pk=stream.message_id).exists():
            break
        time.sleep(0.05)
    assert saved(stream) == ("Partial ", MessageStatus.STREAMING)
    assert Run.objects.get(pk=stream.emitter.run.pk).last_seq == stream.emitter.seq


def sent_by(stream: MessageStream, monkeypatch) -> list[dict]:
    """The events the stream's emitter hands to the channel layer from now on."""
    sent: list[dict] = []
    monkeypatch.setattr("delegation.runs.emitter.emit", sent.append)
    return sent


def test_the_first_words_go_out_at_once_and_what_follows_is_coalesced(user, settings, monkeypatch):
    """Time to the first token: the first delta is not held for a coalescing window."""
    settings.EVENT_COALESCE_MS = 60_000
    stream = new_stream(user)
    sent = sent_by(stream, monkeypatch)
    stream.add("Hel")
    stream.add("lo")
    stream.add(", world")
    assert [e["type"] for e in sent] == ["message.started", "message.delta"]
    assert sent[1]["data"]["text"] == "Hel"
    stream.complete(usage={})
    deltas = [e["data"]["text"] for e in sent if e["type"] == "message.delta"]
    assert deltas == ["Hel", "lo, world"]


def test_words_kept_after_the_end_are_announced_once_as_a_reload_would_show_them(
    unsaved, monkeypatch
):
    """A page resyncs when its turn is stopped; words shown before the stop but saved after it
    (no checkpoint had come) reach it as the message's final state, past the run's end."""
    sent = sent_by(unsaved, monkeypatch)
    unsaved.add("Hello")
    Run.objects.filter(pk=unsaved.emitter.run.pk).update(status=RunStatus.CANCELLED)
    run_mark_ended(unsaved.emitter.run.pk)
    # (On Redis this process hears the end a moment later; until then words still go out,
    # and are kept as shown.)
    wait_until(unsaved.emitter.end.ended, what="this process to hear the end")
    unsaved.add(" and more")  # after the end: never sent, never kept
    unsaved.keep_text()
    assert saved(unsaved) == ("Hello", MessageStatus.CANCELLED)
    kept = [e for e in sent if e["type"] == "message.completed"]
    assert [(e["message_id"], e["data"]["text"], e["data"]["status"]) for e in kept] == [
        (str(unsaved.message_id), "Hello", MessageStatus.CANCELLED)
    ]
    assert kept[0]["seq"] > max(e["seq"] for e in sent if e["type"] != "message.completed")
    unsaved.keep_text()  # again (a later step's end): nothing changed, nothing sent
    assert len([e for e in sent if e["type"] == "message.completed"]) == 1


def test_a_message_closed_by_the_end_with_fewer_words_is_extended_and_announced(
    unsaved, monkeypatch
):
    sent = sent_by(unsaved, monkeypatch)
    unsaved.add("Hello")
    unsaved.persist()  # saved as "Hello"; the end closes it so
    ChatMessage.objects.filter(pk=unsaved.message_id).update(
        content="Hel", status=MessageStatus.CANCELLED
    )
    Run.objects.filter(pk=unsaved.emitter.run.pk).update(status=RunStatus.CANCELLED)
    unsaved.keep_text()
    assert saved(unsaved) == ("Hello", MessageStatus.CANCELLED)
    kept = [e["data"]["text"] for e in sent if e["type"] == "message.completed"]
    assert kept == ["Hello"]


def test_a_run_taken_over_announces_nothing(unsaved, monkeypatch):
    sent = sent_by(unsaved, monkeypatch)
    unsaved.add("Hello")
    Run.objects.filter(pk=unsaved.emitter.run.pk).update(lease_token=uuid.uuid4())
    unsaved.keep_text()
    assert [e["type"] for e in sent] == ["message.started", "message.delta"]
