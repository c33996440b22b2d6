"""Background work of knowledge: indexing a document, sweeping lost ones (thin; services work).

Indexing runs on the "knowledge" queue (CELERY_TASK_ROUTES), never in front of chat work."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from agents.knowledge.services import INDEX_DOCUMENT, document_index
from agents.knowledge.sweeper import documents_sweep


@shared_task(
    name=INDEX_DOCUMENT,
    ignore_result=True,
    soft_time_limit=settings.KNOWLEDGE_INDEX_TIME_LIMIT,  # the document fails with the reason
    time_limit=settings.KNOWLEDGE_INDEX_TIME_LIMIT + 30,  # then the sweeper sees it stale
)
def index_document(document_id: int) -> None:
    """Index one document by id (a duplicate delivery finds it no longer queued: a no-op)."""
    document_index(document_id=document_id)


@shared_task(name="knowledge.sweep_documents", ignore_result=True)
def sweep_documents() -> dict[str, int]:
    """Beat-driven: send again, or fail, documents queued or indexing too long."""
    return documents_sweep()
