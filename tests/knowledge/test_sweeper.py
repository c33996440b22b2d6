"""The document sweeper: a document queued or indexing past KNOWLEDGE_INDEX_STALE_SECONDS is
sent again, then failed with the reason after KNOWLEDGE_INDEX_MAX_ATTEMPTS sends; exactly once
when sweeps run at the same time; and it runs under Celery beat and in embedded mode."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents.knowledge import sweeper
from agents.knowledge.claim import document_claim
from agents.knowledge.models import Document, DocumentStatus
from agents.knowledge.services import INDEX_DOCUMENT, document_upload
from agents.knowledge.sweeper import document_sweep, documents_recover_orphans, documents_sweep


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The document ids the sweeper sends to be indexed (the task is not run)."""
    calls: list[int] = []
    lock = threading.Lock()

    def record(task, document_id):
        assert task == INDEX_DOCUMENT
        with lock:
            calls.append(document_id)

    monkeypatch.setattr(sweeper, "enqueue", record)
    return calls


def stale_document(kb, name: str, *, status=DocumentStatus.QUEUED, attempts=1, age=None):
    """A document whose status was set `age` ago (default: just past the stale limit)."""
    document = document_upload(kb=kb, filename=f"{name}.md", data=f"# {name}\n\ntext".encode())
    age = age if age is not None else timedelta(seconds=901)
    Document.objects.filter(pk=document.pk).update(
        status=status, attempts=attempts, status_at=timezone.now() - age
    )
    return Document.objects.get(pk=document.pk)


@pytest.mark.django_db
def test_a_document_queued_too_long_is_sent_again_then_failed(kb, sent, settings):
    assert settings.KNOWLEDGE_INDEX_STALE_SECONDS == 900  # the default this test ages past
    document = stale_document(kb, "lost")
    assert documents_sweep() == {"resent": 1, "failed": 0}
    document.refresh_from_db()
    assert (document.status, document.attempts, sent) == (DocumentStatus.QUEUED, 2, [document.pk])
    assert documents_sweep() == {"resent": 0, "failed": 0}  # just sent: not stale yet
    Document.objects.filter(pk=document.pk).update(status_at=document.status_at - timedelta(1))
    assert documents_sweep() == {"resent": 0, "failed": 1}
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED and sent == [document.pk]
    assert 'a worker consumes the "knowledge" queue' in document.status_text


@pytest.mark.django_db
def test_a_document_whose_worker_died_is_sent_again_then_failed(kb, sent):
    died = stale_document(kb, "died", status=DocumentStatus.INDEXING)
    died_twice = stale_document(kb, "twice", status=DocumentStatus.INDEXING, attempts=2)
    assert documents_sweep() == {"resent": 1, "failed": 1}
    died.refresh_from_db()
    died_twice.refresh_from_db()
    assert (died.status, died.attempts, sent) == (DocumentStatus.QUEUED, 2, [died.pk])
    assert died_twice.status == DocumentStatus.FAILED
    assert "Indexing stopped without an end, after 2 sends" in died_twice.status_detail


@pytest.mark.django_db
def test_the_stale_limit_at_its_edge_and_ended_documents_are_left_alone(kb, sent):
    stale_document(kb, "fresh", age=timedelta(seconds=899))
    stale_document(kb, "working", status=DocumentStatus.INDEXING, age=timedelta(seconds=899))
    stale_document(kb, "indexed", status=DocumentStatus.INDEXED, age=timedelta(days=9))
    stale_document(kb, "failed", status=DocumentStatus.FAILED, age=timedelta(days=9))
    assert documents_sweep() == {"resent": 0, "failed": 0} and sent == []


@pytest.mark.django_db
def test_a_document_queued_before_the_migration_is_swept(kb, sent):
    legacy = stale_document(kb, "legacy", attempts=0)
    Document.objects.filter(pk=legacy.pk).update(status_at=None)  # as migration 0004 left it
    assert documents_sweep()["resent"] == 1 and sent == [legacy.pk]


@pytest.mark.django_db
def test_a_sweep_acts_on_what_it_read_only(kb, sent):
    """Two sweeps that read the same stale row: the second finds it changed, and a worker
    that claims the document between a sweep's read and its update wins."""
    document = stale_document(kb, "raced")
    seen = Document.objects.filter(pk=document.pk).values("pk", "status", "status_at", "attempts")[
        0
    ]
    now = timezone.now()
    assert document_sweep(seen=seen, now=now) == "resent"
    assert document_sweep(seen=seen, now=now) is None
    assert sent == [document.pk]
    other = stale_document(kb, "claimed")
    seen = Document.objects.filter(pk=other.pk).values("pk", "status", "status_at", "attempts")[0]
    assert document_claim(document_id=other.pk) is not None  # a worker took it meanwhile
    assert document_sweep(seen=seen, now=now) is None
    assert Document.objects.get(pk=other.pk).status == DocumentStatus.INDEXING
    assert sent == [document.pk]


@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_send_each_document_once(kb, sent):
    documents = [stale_document(kb, f"doc{i}") for i in range(20)]
    start = threading.Barrier(2)
    results: list[dict[str, int]] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            start.wait(timeout=10)
            results.append(documents_sweep())
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(sent) == sorted(d.pk for d in documents)  # each once, whoever sent it
    assert sum(r["resent"] for r in results) == 20
    assert set(Document.objects.values_list("attempts", flat=True)) == {2}


def test_celery_beat_runs_the_sweep(settings):
    from agents.knowledge.tasks import sweep_documents

    entry = settings.CELERY_BEAT_SCHEDULE["sweep-documents"]
    assert entry["task"] == sweep_documents.name == "knowledge.sweep_documents"
    assert entry["schedule"] == settings.KNOWLEDGE_SWEEP_SECONDS


def test_embedded_mode_sweeps_documents_at_start_only(embedded_beat):
    """Nothing can stop an indexing thread: a long one is not lost, and a sweep would take it
    for one; what the process before left is sent again at start."""
    assert documents_sweep not in [job for _, job in embedded_beat.jobs]


@pytest.mark.django_db
def test_the_embedded_server_sends_again_what_the_one_before_it_left_at_start(kb, sent):
    """It is the only worker: a document still queued or indexing was left by the process
    before it (killed mid-indexing), and is sent again at once, not after the stale time."""
    left = stale_document(kb, "left", age=timedelta(seconds=5), status=DocumentStatus.INDEXING)
    assert documents_recover_orphans() == {"resent": 1, "failed": 0}
    assert sent == [left.pk]


def test_embedded_mode_recovers_documents_at_start(embedded_beat):
    assert documents_recover_orphans in embedded_beat.at_start


@pytest.mark.django_db
def test_a_document_waiting_in_a_moving_backlog_is_not_taken_for_a_lost_one(kb, sent):
    """Another document was indexed a minute ago: the queue moves, and the one queued for
    fifteen minutes is waiting its turn; once the queue stands still, it is lost."""
    waiting = stale_document(kb, "waiting")
    worked = stale_document(kb, "worked", status=DocumentStatus.INDEXED, age=timedelta(minutes=1))
    assert documents_sweep() == {"resent": 0, "failed": 0} and sent == []
    Document.objects.filter(pk=worked.pk).update(status_at=timezone.now() - timedelta(hours=1))
    assert documents_sweep() == {"resent": 1, "failed": 0} and sent == [waiting.pk]
