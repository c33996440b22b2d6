"""Who indexes a document: a worker claims a queued one (queued → indexing), and only the
holder of that claim may end it, indexed or failed. A duplicate delivery finds nothing queued
and does nothing; a claim taken over (re-indexed, or re-sent by the sweeper) ends nothing."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from agents.knowledge.models import Document, DocumentStatus

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    """A worker's hold on one document while it indexes it."""

    document_id: int
    claimed_at: datetime


def document_claim(*, document_id: int) -> Claim | None:
    """Take a queued document for indexing (one conditional UPDATE, so two deliveries of its
    task cannot both take it); None when it is gone or not queued."""
    now = timezone.now()
    taken = Document.objects.filter(pk=document_id, status=DocumentStatus.QUEUED).update(
        status=DocumentStatus.INDEXING, status_at=now, status_detail="", updated_at=now
    )
    return Claim(document_id=document_id, claimed_at=now) if taken else None


def claimed(claim: Claim) -> QuerySet[Document]:
    """The document, while the claim still holds it (else an empty query set)."""
    return Document.objects.filter(
        pk=claim.document_id, status=DocumentStatus.INDEXING, status_at=claim.claimed_at
    )


def claim_fail(claim: Claim, reason: str) -> bool:
    """End the claimed document `failed` with a reason people read (in admin and the API);
    False when the claim no longer holds it."""
    logger.info("document %s failed to index: %s", claim.document_id, reason)
    now = timezone.now()
    return bool(
        claimed(claim).update(
            status=DocumentStatus.FAILED, status_detail=reason, status_at=now, updated_at=now
        )
    )
