"""The periodic sweep that keeps documents from staying queued or indexing forever: one whose
task was lost (a broker outage, a restarted embedded server, no worker on the knowledge queue)
or whose worker died (stopped at its hard time limit, out of memory) is sent again, and after
KNOWLEDGE_INDEX_MAX_ATTEMPTS sends marked failed with the reason."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.knowledge.models import Document, DocumentStatus
from agents.knowledge.services import INDEX_DOCUMENT
from config.enqueue import enqueue

BATCH = 200


def documents_sweep(*, stale_seconds: float | None = None) -> dict[str, int]:
    """Send again, or fail, each document queued or indexing for longer than `stale_seconds`
    (KNOWLEDGE_INDEX_STALE_SECONDS). Safe with sweeps running at once (two beat ticks on two
    workers): each acts on a document only by a conditional UPDATE on the status and time it
    read, so exactly one of them sends it or fails it, and none if a worker took it meanwhile."""
    now = timezone.now()
    if stale_seconds is None:
        stale_seconds = settings.KNOWLEDGE_INDEX_STALE_SECONDS
    cutoff = now - timedelta(seconds=stale_seconds)
    # A document queued that long is lost only if the knowledge queue stands still: while a
    # worker took or finished another one in that time, it is waiting its turn in a backlog
    # (an upload of many, a re-index of all), and sending it again would only lengthen it.
    moving = Document.objects.filter(status_at__gte=cutoff).exclude(status=DocumentStatus.QUEUED)
    waiting = (
        [DocumentStatus.INDEXING]
        if moving.exists()
        else [DocumentStatus.INDEXING, DocumentStatus.QUEUED]
    )
    stale = Document.objects.filter(
        Q(status_at__lt=cutoff) | Q(status_at__isnull=True),  # (null: queued before 0004)
        status__in=waiting,
    ).order_by("status_at", "pk")
    counts = {"resent": 0, "failed": 0}
    for seen in stale.values("pk", "status", "status_at", "attempts")[:BATCH]:
        if outcome := document_sweep(seen=seen, now=now):
            counts[outcome] += 1
    return counts


def documents_recover_orphans() -> dict[str, int]:
    """At the start of the embedded server, the only worker there is: every document still
    queued or indexing was left by the process before it, and is sent again (or failed, past
    its attempts) now rather than after KNOWLEDGE_INDEX_STALE_SECONDS."""
    return documents_sweep(stale_seconds=0)


def document_sweep(*, seen: Mapping[str, Any], now: datetime) -> str | None:
    """ "resent" or "failed" for one stale document as the sweep read it (`pk`, `status`,
    `status_at`, `attempts`); None when it changed since (another sweep, a worker, a person)."""
    same = Document.objects.filter(
        pk=seen["pk"], status=seen["status"], status_at=seen["status_at"]
    )
    if seen["attempts"] >= settings.KNOWLEDGE_INDEX_MAX_ATTEMPTS:
        failed = same.update(
            status=DocumentStatus.FAILED,
            status_detail=_reason(seen),
            status_at=now,
            updated_at=now,
        )
        return "failed" if failed else None
    with transaction.atomic():  # the task is sent once the new status is committed
        resent = same.update(
            status=DocumentStatus.QUEUED,
            status_detail="",
            status_at=now,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
        if resent:
            enqueue(INDEX_DOCUMENT, seen["pk"])
    return "resent" if resent else None


def _reason(seen: Mapping[str, Any]) -> str:
    """Why a document that was sent `attempts` times is failed, for the admin who reads it."""
    stale, sends = settings.KNOWLEDGE_INDEX_STALE_SECONDS, seen["attempts"]
    if seen["status"] == DocumentStatus.QUEUED:
        return (
            f"No worker took it for indexing within {stale} s, after each of {sends} sends "
            '(KNOWLEDGE_INDEX_STALE_SECONDS); check that a worker consumes the "knowledge" '
            "queue, then re-index it."
        )
    return (
        f"Indexing stopped without an end, after {sends} sends (its worker died: stopped at "
        "its time limit, or out of memory); split the document into parts, or re-index it to "
        "try again."
    )
