"""Retrieval: one service over the database's lexical backend, fused with dense vectors when
EMBEDDINGS_MODEL is set. Callers pass knowledge bases already filtered by access."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils.translation import gettext as _

from agents.knowledge.models import Chunk
from agents.knowledge.retrieval import dense
from agents.knowledge.retrieval.base import Hit, LexicalBackend
from agents.knowledge.retrieval.postgres import PostgresBackend
from agents.knowledge.retrieval.sqlite import SQLiteBackend
from agents.knowledge.text import coverage, query_terms
from config.errors import AppError
from config.telemetry import capture_content, tracer

logger = logging.getLogger(__name__)

_BACKENDS: dict[str, LexicalBackend] = {"sqlite": SQLiteBackend(), "postgresql": PostgresBackend()}


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk with what a citation needs."""

    document_id: int
    title: str
    version: int
    chunk_id: int
    heading_path: list[str]
    score: float
    text: str
    effective_date: date
    kb: str
    kb_name: str  # the knowledge base's name as people read it in the active language
    coverage: float  # share of the query's terms the passage contains

    def as_dict(self) -> dict:
        """The JSON-ready form tools return."""
        return {**self.__dict__, "effective_date": self.effective_date.isoformat()}


def lexical_backend() -> LexicalBackend:
    """The lexical backend of the database in use."""
    try:
        return _BACKENDS[connection.vendor]
    except KeyError:
        raise ImproperlyConfigured(
            f"knowledge search supports SQLite and Postgres, not {connection.vendor}"
        ) from None


def validate_query(query: str) -> str:
    """The trimmed query, or an AppError when it is empty or over KNOWLEDGE_MAX_QUERY_CHARS."""
    query = (query or "").strip()
    if not query or not query_terms(query):
        raise AppError("empty_query", _("The search query is empty; say what to look for."))
    if len(query) > settings.KNOWLEDGE_MAX_QUERY_CHARS:
        raise AppError(
            "query_too_long",
            _(
                "The search query has %(length)s characters; the limit is %(limit)s. "
                "Search with the key words only."
            )
            % {"length": len(query), "limit": settings.KNOWLEDGE_MAX_QUERY_CHARS},
        )
    return query


def passages_search(*, kb_ids: list[int], query: str, top_k: int = 5) -> list[Passage]:
    """The `top_k` best passages for `query` in these knowledge bases, best first."""
    query = validate_query(query)
    top_k = max(1, min(top_k, settings.KNOWLEDGE_MAX_TOP_K))
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": ",".join(str(kb) for kb in kb_ids),
        "gen_ai.retrieval.top_k": top_k,
    }
    if capture_content():
        attributes["gen_ai.retrieval.query.text"] = query
    with tracer().start_as_current_span("retrieval knowledge", attributes=attributes) as span:
        terms = query_terms(query)
        pool = max(top_k * 4, 50)
        hits = lexical_backend().search(kb_ids=kb_ids, terms=terms, limit=pool)
        if dense.enabled() and kb_ids:
            try:
                hits = dense.fuse(hits, dense.search(kb_ids=kb_ids, query=query, limit=pool))
            except dense.EmbeddingError as exc:  # lexical results still answer
                logger.warning("dense retrieval skipped: %s", exc)
                span.set_attribute("agent_platform.retrieval.dense_skipped", True)
        passages = _passages(hits[:top_k], terms)
        span.set_attribute("agent_platform.retrieval.passages", len(passages))
    return passages


def _passages(hits: list[Hit], terms: list) -> list[Passage]:
    chunks = (
        Chunk.objects.select_related("document", "kb")
        .defer("document__original", "document__text", "vector")
        .in_bulk([h.chunk_id for h in hits])
    )
    found = []
    for hit in hits:
        chunk = chunks.get(hit.chunk_id)
        if chunk is None:  # deleted between ranking and loading
            continue
        found.append(
            Passage(
                document_id=chunk.document_id,
                title=chunk.document.title,
                version=chunk.document.version,
                chunk_id=chunk.id,
                heading_path=list(chunk.heading_path),
                score=round(hit.score, 6),
                text=chunk.text,
                effective_date=chunk.document.effective_date,
                kb=chunk.kb.name,
                kb_name=chunk.kb.name_in(),
                coverage=round(coverage(terms, chunk.search_text, chunk.search_title), 3),
            )
        )
    return found
