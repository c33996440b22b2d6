"""Indexing has a queue of its own, so chat work never waits behind a document: Celery routes
the task to the "knowledge" queue, and with no broker it runs on an in-process pool of its own.
(tests/e2e/test_distributed_knowledge.py runs it on real workers.)"""

from __future__ import annotations

import threading

import pytest
from celery import shared_task

from agents.knowledge import tasks
from agents.knowledge.models import DocumentStatus
from agents.knowledge.services import INDEX_DOCUMENT, document_upload, knowledge_base_create
from config.celery_app import app
from config.enqueue import enqueue, wait_for_in_process_tasks

CHAT_WORK_DONE = threading.Event()


@shared_task(name="tests.knowledge_chat_probe")
def chat_probe() -> None:
    """Stands for a chat turn: work on the default queue."""
    CHAT_WORK_DONE.set()


def test_indexing_is_routed_to_the_knowledge_queue_and_chat_work_is_not():
    assert app.amqp.router.route({}, INDEX_DOCUMENT)["queue"].name == "knowledge"
    for name in ("delegation.advance_run", "knowledge.sweep_documents", chat_probe.name):
        assert app.amqp.router.route({}, name)["queue"].name == "celery", name


@pytest.mark.django_db(transaction=True)
def test_embedded_indexing_never_holds_the_pool_chat_work_runs_on(settings, monkeypatch):
    settings.TASKS_RUN_SYNC = False  # the in-process pools, as `make run` has them
    settings.INPROCESS_WORKERS = 1  # one thread for chat work: a document on it would block it
    CHAT_WORK_DONE.clear()
    indexing, release, threads = threading.Event(), threading.Event(), []
    index = tasks.document_index

    def big_document(*, document_id: int) -> None:
        threads.append(threading.current_thread().name)
        indexing.set()
        release.wait(timeout=30)  # a document that takes a long time
        index(document_id=document_id)

    monkeypatch.setattr(tasks, "document_index", big_document)
    kb = knowledge_base_create(name="hr")
    document = document_upload(kb=kb, filename="big.md", data=b"# Big\n\nLong text.")
    try:
        assert indexing.wait(timeout=10)
        enqueue(chat_probe)
        assert CHAT_WORK_DONE.wait(timeout=10), "chat work waited behind the indexing"
    finally:
        release.set()
        wait_for_in_process_tasks()
    assert threads[0].startswith("inprocess-knowledge_")
    document.refresh_from_db()
    assert document.status == DocumentStatus.INDEXED


@pytest.mark.django_db(transaction=True)
def test_embedded_documents_index_one_at_a_time_by_default(settings, monkeypatch):
    settings.TASKS_RUN_SYNC = False
    assert settings.INPROCESS_QUEUE_WORKERS == {"knowledge": 1}
    running, most = [0], [0]
    lock = threading.Lock()
    index = tasks.document_index

    def counted(*, document_id: int) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            index(document_id=document_id)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(tasks, "document_index", counted)
    kb = knowledge_base_create(name="hr")
    for number in range(4):
        document_upload(kb=kb, filename=f"d{number}.md", data=f"# D\n\ntext {number}".encode())
    wait_for_in_process_tasks()
    assert most[0] == 1
    assert set(kb.documents.values_list("status", flat=True)) == {DocumentStatus.INDEXED}
