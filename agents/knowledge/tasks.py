"""Background work of knowledge: indexing a document (thin; the service does the work)."""

from __future__ import annotations

from celery import shared_task

from agents.knowledge.services import INDEX_DOCUMENT, document_index


@shared_task(name=INDEX_DOCUMENT)
def index_document(document_id: int) -> None:
    """Index one document by id (a duplicate delivery re-indexes to the same chunks)."""
    document_index(document_id=document_id)
