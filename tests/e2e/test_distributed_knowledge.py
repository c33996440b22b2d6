"""Indexing on real Celery workers (Postgres, Redis): it runs on the knowledge queue's worker
only, decompression bombs fail in seconds there, and chat turns go on while documents index.

The workers are started as the Procfile starts them: one for the default queue ("celery"),
one for "knowledge" (CELERY_WORKER_QUEUES is celery worker's -Q option, from the environment).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from agents.knowledge.models import Document, DocumentStatus
from agents.knowledge.services import document_upload, knowledge_base_create
from delegation.models import Run, RunStatus
from delegation.turns.start import turn_start
from tests.fake_openai import FakeOpenAI
from tests.knowledge import bombs
from tests.server_logs import output_path
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


@dataclass
class Stack:
    """The fake embedding server both workers use, and where their logs stood at their start."""

    fake: FakeOpenAI
    logs_from: dict[str, int]

    def index_tasks_of(self, worker: str) -> int:
        """Log lines of indexing tasks by `worker` since it started (received, succeeded)."""
        with open(output_path(f"celery-{worker}.log"), "rb") as log:
            log.seek(self.logs_from[worker])
            return log.read().decode(errors="replace").count("Task knowledge.index_document[")


@pytest.fixture
def two_workers(workers, fake_openai) -> Stack:
    """A chat worker and a knowledge worker, both able to embed (through the fake server)."""
    embeddings = {
        "EMBEDDINGS_MODEL": "fake-embed",
        "EMBEDDINGS_BASE_URL": fake_openai.base_url,
        "EMBEDDINGS_API_KEY": "test-key",
        "EMBEDDINGS_TIMEOUT": "120",  # a held embedding call holds its worker process
    }
    logs = {name: output_path(f"celery-{name}.log") for name in ("w1", "k1")}
    stack = Stack(fake_openai, {n: p.stat().st_size if p.exists() else 0 for n, p in logs.items()})
    workers.start("w1", CELERY_WORKER_QUEUES="celery", **embeddings)
    workers.start("k1", CELERY_WORKER_QUEUES="knowledge", **embeddings)
    return stack


def statuses(ids: list[int]) -> dict[int, str]:
    return dict(Document.objects.filter(pk__in=ids).values_list("pk", "status"))


def test_bombs_fail_in_seconds_on_the_knowledge_worker(two_workers):
    kb = knowledge_base_create(name="hr")
    hostile = {
        "empty-paragraphs.docx": bombs.docx_of_empty_paragraphs(100_000),  # 160 s before
        "declares-4-gb.docx": bombs.zip_declaring(4_000_000_000),
        "many-files.docx": bombs.zip_of_entries(1001),
        "pages.pdf": bombs.pdf_of_blank_pages(2001),
        "inflating.pdf": bombs.pdf_with_inflating_page(76 * 2**20),
    }
    ids = [document_upload(kb=kb, filename=name, data=data).pk for name, data in hostile.items()]
    wait_until(
        lambda: set(statuses(ids).values()) == {DocumentStatus.FAILED},
        timeout=60,
        what="every bomb failed",
    )
    reasons = dict(Document.objects.filter(pk__in=ids).values_list("filename", "status_detail"))
    assert "KNOWLEDGE_MAX_PARAGRAPHS" in reasons["empty-paragraphs.docx"]
    assert "KNOWLEDGE_MAX_UNPACKED_BYTES" in reasons["declares-4-gb.docx"]
    assert "KNOWLEDGE_MAX_ZIP_ENTRIES" in reasons["many-files.docx"]
    assert "KNOWLEDGE_MAX_PDF_PAGES" in reasons["pages.pdf"]
    assert "safety limit" in reasons["inflating.pdf"]
    assert two_workers.index_tasks_of("k1") == 2 * len(hostile)
    assert two_workers.index_tasks_of("w1") == 0


def test_a_chat_turn_runs_while_documents_index(two_workers, user, entry_agent):
    fake = two_workers.fake
    fake.embeddings_gate.clear()  # the embedding server hangs: indexing takes a long time
    kb = knowledge_base_create(name="hr")
    ids = [
        document_upload(kb=kb, filename=f"policy-{n}.md", data=f"# Leave {n}\n\nText.".encode()).pk
        for n in range(2)  # as many as the chat worker has processes
    ]
    try:
        wait_until(lambda: len(fake.embedding_requests) == 2, timeout=30, what="both embedding")
        sent = turn_start(
            user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="what is 19*23?"
        )
        wait_until(
            lambda: Run.objects.get(pk=sent.run.id).status == RunStatus.SUCCEEDED,
            timeout=30,
            what="the chat turn to end while the documents index",
        )
        assert DocumentStatus.INDEXED not in statuses(ids).values()  # both still embedding
    finally:
        fake.embeddings_gate.set()
    wait_until(lambda: set(statuses(ids).values()) == {DocumentStatus.INDEXED}, timeout=60)
