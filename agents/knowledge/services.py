"""Writes of knowledge: knowledge bases, uploads with versions, indexing, re-indexing, deletion."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from datetime import date
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.knowledge.chunking import ChunkDraft, chunk_blocks
from agents.knowledge.claim import Claim, claim_fail, claimed, document_claim
from agents.knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from agents.knowledge.parsing import SUPPORTED, ParseError, file_type_of, parse
from agents.knowledge.retrieval import dense
from agents.knowledge.selectors import document_with_hash
from agents.knowledge.text import passage_index_text
from agents.models import Agent
from agents.names import validate_descriptions, validate_display_names
from config.enqueue import enqueue
from config.errors import AppError

logger = logging.getLogger(__name__)

INDEX_DOCUMENT = "knowledge.index_document"  # agents.knowledge.tasks.index_document


def document_upload(
    *,
    kb: KnowledgeBase,
    filename: str,
    data: bytes,
    title: str = "",
    source: str = "",
    effective_date: date | None = None,
    user: Any = None,
    background: bool = True,
) -> Document:
    """Store an upload as a new document, or a new version of the document with the same title
    (or source), and index it: in the background, or before returning when `background` is
    False (commands). Refuses empty, oversized, unsupported and duplicate files with a clear
    AppError; nothing is stored then."""
    file_type = upload_check(filename=filename, size=len(data))
    content_hash = content_hash_of(data)
    title = (title or filename.rsplit(".", 1)[0]).strip()[:300]
    with transaction.atomic():
        KnowledgeBase.objects.select_for_update().filter(pk=kb.pk).first()  # one upload at a time
        _refuse_duplicate(kb, content_hash)
        latest = Document.objects.filter(_lineage(kb, title, source)).aggregate(v=Max("version"))
        try:
            with transaction.atomic():
                document = Document.objects.create(
                    kb=kb,
                    title=title,
                    source=source.strip()[:1000],
                    effective_date=effective_date or timezone.localdate(),
                    version=(latest["v"] or 0) + 1,
                    filename=filename[-255:],
                    file_type=file_type,
                    original=data,
                    content_hash=content_hash,
                    uploaded_by=user if getattr(user, "pk", None) else None,
                    status_at=timezone.now(),
                    attempts=1,
                )
        except IntegrityError:  # a concurrent upload of the same bytes won the race
            _refuse_duplicate(kb, content_hash)
            raise
        if background:
            enqueue(INDEX_DOCUMENT, document.pk)
    if not background:
        document_index(document_id=document.pk)
        document.refresh_from_db()
    return document


def content_hash_of(data: bytes) -> str:
    """The SHA-256 hex digest that identifies a file's content."""
    return hashlib.sha256(data).hexdigest()


def upload_check(*, filename: str, size: int) -> str:
    """The file's type, or an AppError for an unsupported type, an empty or oversized file."""
    file_type = file_type_of(filename)
    if not file_type:
        raise AppError(
            "unsupported_file",
            _("%(file)s is not a supported type; upload one of: %(types)s")
            % {"file": repr(filename), "types": ", ".join(f".{ext}" for ext in SUPPORTED)},
            status=415,
        )
    if not size:
        raise AppError("empty_file", _("%(file)s is empty.") % {"file": repr(filename)})
    if size > settings.KNOWLEDGE_MAX_FILE_BYTES:
        raise AppError(
            "file_too_large",
            _("%(file)s has %(size)s bytes; the limit is %(limit)s (KNOWLEDGE_MAX_FILE_BYTES).")
            % {"file": repr(filename), "size": size, "limit": settings.KNOWLEDGE_MAX_FILE_BYTES},
            status=413,
        )
    return file_type


def _refuse_duplicate(kb: KnowledgeBase, content_hash: str) -> None:
    if twin := document_with_hash(kb=kb, content_hash=content_hash):
        raise AppError(
            "duplicate_document",
            _(
                "This file is already in %(knowledge_base)s as “%(title)s” version "
                "%(version)s; no new version was made."
            )
            % {"knowledge_base": kb.name, "title": twin.title, "version": twin.version},
            details={"document_id": twin.pk, "version": twin.version},
            status=409,
        )


def _lineage(kb: KnowledgeBase, title: str, source: str) -> Q:
    """Versions of the same document: same knowledge base and same title or same source."""
    same = Q(title=title) | Q(source=source) if source else Q(title=title)
    return Q(kb=kb) & same


def document_index(*, document_id: int) -> None:
    """Claim a queued document, parse, chunk (and embed) it, then swap its chunks in one
    transaction: searches see the old chunks or the new ones, never a mix. Every error ends
    the document `failed` with the reason (what a dying worker leaves, the sweeper ends)."""
    claim = document_claim(document_id=document_id)
    if claim is None:
        return  # deleted, or not queued: a duplicate delivery, or another worker has it
    try:
        _index(claim)
    except ParseError as exc:
        claim_fail(claim, str(exc))
    except SoftTimeLimitExceeded:
        claim_fail(
            claim,
            f"Indexing took longer than {settings.KNOWLEDGE_INDEX_TIME_LIMIT} s "
            "(KNOWLEDGE_INDEX_TIME_LIMIT) and was stopped; split the document into parts.",
        )
    except Exception as exc:  # a worker logs and goes on; the document says what happened
        logger.exception("indexing document %s failed", document_id)
        claim_fail(
            claim,
            f"Indexing failed unexpectedly ({type(exc).__name__}: {str(exc)[:300]}); the "
            "worker's log has the details. Re-index it to try again.",
        )


def _index(claim: Claim) -> None:
    """Index the claimed document; its result is dropped if the claim was taken over."""
    document = claimed(claim).first()
    if document is None:
        return  # deleted meanwhile
    text, drafts = _drafts(document)
    vectors, note = _vectors(document, drafts)
    with transaction.atomic():
        document = claimed(claim).select_for_update().first()
        if document is None:
            return  # re-indexed or re-sent meanwhile: the newer claim's result counts
        token_count = _swap_chunks(document, drafts, vectors)
        now = timezone.now()
        claimed(claim).update(
            status=DocumentStatus.INDEXED,
            status_detail=f"{len(drafts)} chunks{note}",
            status_at=now,
            chunk_count=len(drafts),
            token_count=token_count,
            text=text,
            indexed_at=now,
            updated_at=now,
        )
        _supersede(document)


def _drafts(document: Document) -> tuple[str, list[ChunkDraft]]:
    """The extracted text and the chunks of a document; ParseError when it cannot be indexed."""
    blocks = parse(bytes(document.original), document.file_type)
    drafts = chunk_blocks(
        blocks, max_chars=settings.KNOWLEDGE_CHUNK_CHARS, overlap=settings.KNOWLEDGE_CHUNK_OVERLAP
    )
    if len(drafts) > settings.KNOWLEDGE_MAX_CHUNKS:
        raise ParseError(
            f"The document makes {len(drafts)} chunks; the limit is "
            f"{settings.KNOWLEDGE_MAX_CHUNKS} (KNOWLEDGE_MAX_CHUNKS). Split it into parts."
        )
    return "\n\n".join(block.text for block in blocks), drafts


def _vectors(document: Document, drafts: list[ChunkDraft]) -> tuple[list | None, str]:
    """Embeddings of the chunks when dense retrieval is on; a failure keeps lexical search."""
    if not dense.enabled():
        return None, ""
    try:
        return dense.embed([f"{document.title}\n{d.text}" for d in drafts]), ""
    except dense.EmbeddingError as exc:
        logger.warning("document %s indexed without vectors: %s", document.pk, exc)
        return None, f" (lexical only: {exc})"


def _swap_chunks(document: Document, drafts: list[ChunkDraft], vectors: list | None) -> int:
    """Replace the document's chunks; the number of index terms written."""
    Chunk.objects.filter(document=document).delete()
    rows = []
    for position, draft in enumerate(drafts):
        indexed = passage_index_text(document.title, draft.heading_path, draft.text)
        vector = vectors[position] if vectors else None
        rows.append(
            Chunk(
                document=document,
                kb_id=document.kb_id,
                position=position,
                heading_path=list(draft.heading_path),
                text=draft.text,
                char_count=len(draft.text),
                search_text=indexed.words,
                search_title=indexed.title,
                token_count=indexed.length,
                vector=dense.pack(vector) if vector else None,
                vector_dim=len(vector) if vector else None,
                vector_model=settings.EMBEDDINGS_MODEL if vector else "",
            )
        )
    Chunk.objects.bulk_create(rows, batch_size=500)
    return sum(row.token_count for row in rows)


def _supersede(document: Document) -> None:
    """The newest indexed version of a document is the current one; older versions are marked
    superseded and lose their chunks (newer ones still queued or failed are left alone)."""
    versions = Document.objects.filter(_lineage(document.kb, document.title, document.source))
    newest = versions.filter(status=DocumentStatus.INDEXED).order_by("-version", "-pk").first()
    older = versions.exclude(pk=newest.pk).filter(version__lte=newest.version)
    Chunk.objects.filter(document__in=older).delete()
    older.update(superseded=True, superseded_by=newest, updated_at=timezone.now())
    versions.filter(pk=newest.pk).update(superseded=False, superseded_by=None)


def document_reindex(*, document: Document) -> None:
    """Queue a document for indexing again (its current chunks stay searchable until the swap;
    an indexing already running is dropped at its end)."""
    with transaction.atomic():
        now = timezone.now()
        Document.objects.filter(pk=document.pk).update(
            status=DocumentStatus.QUEUED,
            status_detail="",
            status_at=now,
            attempts=1,
            updated_at=now,
        )
        enqueue(INDEX_DOCUMENT, document.pk)


def document_delete(*, document: Document) -> None:
    """Delete one version; when it was the current one, the newest remaining version becomes
    current again and is re-indexed."""
    with transaction.atomic():
        was_current = not document.superseded
        lineage = _lineage(document.kb, document.title, document.source)
        document.delete()
        if not was_current:
            return
        previous = Document.objects.filter(lineage).order_by("-version").first()
        if previous is not None:
            Document.objects.filter(pk=previous.pk).update(superseded=False, superseded_by=None)
            document_reindex(document=previous)


def knowledge_base_create(
    *,
    name: str,
    display_name: str = "",
    display_names: dict[str, str] | None = None,
    description: str = "",
    descriptions: dict[str, str] | None = None,
    access_group: Any = None,
    access_permission: str = "",
    agents: list[Any] = (),
) -> KnowledgeBase:
    """A new knowledge base, linked to these agents; `display_names` and `descriptions` hold
    its name and description per language (ValidationError when malformed)."""
    validate_display_names(display_names or {})
    validate_descriptions(descriptions or {})
    with transaction.atomic():
        kb = KnowledgeBase.objects.create(
            name=name,
            display_name=display_name or name.replace("-", " ").title(),
            display_names=display_names or {},
            description=description,
            descriptions=descriptions or {},
            access_group=access_group,
            access_permission=access_permission,
        )
        if agents:
            kb.agents.set(agents)
            knowledge_links_changed(agent_ids=[getattr(a, "pk", a) for a in agents])
    return kb


def knowledge_links_changed(*, agent_ids: Iterable[Any]) -> None:
    """Agents whose knowledge bases were linked or unlinked count as saved now (`updated_at`):
    what a run pins of them (the kb tools) is read again, and a delegation taken as an earlier
    read offered them is checked against the agent as it is now (the take's unchanged check,
    delegation.tree.budget)."""
    ids = set(agent_ids)
    if ids:
        Agent.objects.filter(pk__in=ids).update(updated_at=timezone.now())
