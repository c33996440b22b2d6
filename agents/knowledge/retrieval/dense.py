"""Optional dense retrieval: embeddings from any OpenAI-compatible server, stored as compact
float16 vectors and ranked in process (numpy when installed, else plain Python)."""

from __future__ import annotations

import heapq
import math
import struct
import threading
from collections.abc import Sequence
from functools import lru_cache
from operator import mul
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Count, Max

from agents.knowledge.models import Chunk, Document
from agents.knowledge.retrieval.base import Hit

try:  # an optional speed-up, never a requirement
    import numpy
except ImportError:  # pragma: no cover - depends on the environment
    numpy = None

if TYPE_CHECKING:
    import openai

# The SDK is imported where used (agents/providers/openai_provider.py says why).

RRF_K = 60  # the usual reciprocal rank fusion constant


class EmbeddingError(Exception):
    """The embeddings server failed or answered something unusable."""


def enabled() -> bool:
    """Whether EMBEDDINGS_MODEL turns dense retrieval on."""
    return bool(settings.EMBEDDINGS_MODEL)


def _client() -> openai.OpenAI:
    """One client (and connection pool) per configuration, reused across calls and threads."""
    return _client_for(
        settings.EMBEDDINGS_BASE_URL or settings.OPENAI_BASE_URL or None,
        settings.EMBEDDINGS_API_KEY or settings.OPENAI_API_KEY or "not-needed",
        settings.EMBEDDINGS_TIMEOUT,
        settings.OPENAI_MAX_RETRIES,
    )


@lru_cache(maxsize=8)
def _client_for(
    base_url: str | None, api_key: str, timeout: float, max_retries: int
) -> openai.OpenAI:
    import openai

    return openai.OpenAI(
        base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
    )


def embed(texts: Sequence[str]) -> list[list[float]]:
    """Unit-length embeddings of `texts`, in order, batched by EMBEDDINGS_BATCH_SIZE."""
    import openai

    client = _client()
    vectors: list[list[float]] = []
    size = max(1, settings.EMBEDDINGS_BATCH_SIZE)
    for start in range(0, len(texts), size):
        batch = list(texts[start : start + size])
        try:
            answer = client.embeddings.create(model=settings.EMBEDDINGS_MODEL, input=batch)
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"the embeddings server failed: {exc}") from exc
        data = sorted(answer.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbeddingError("the embeddings server answered a different number of vectors")
        vectors.extend(_unit(item.embedding) for item in data)
    return vectors


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def pack(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float16 (half the bytes of float32; ample for cosine)."""
    return struct.pack(f"<{len(vector)}e", *vector)


def unpack(data: bytes, dim: int) -> tuple[float, ...]:
    """The vector `pack` stored."""
    return struct.unpack(f"<{dim}e", bytes(data))


class _VectorCache:
    """Decoded vectors per knowledge base, reloaded when its documents change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[int, tuple[tuple, list[int], object]] = {}

    def vectors(self, kb_id: int, model: str, dim: int) -> tuple[list[int], object]:
        # Chunks change only when a document of the base is indexed, superseded (both touch its
        # updated_at) or deleted (the count drops): a cheap query over the few document rows.
        changes = Document.objects.filter(kb_id=kb_id).aggregate(
            n=Count("id"), last=Max("updated_at")
        )
        stamp = (model, dim, *changes.values())
        rows = Chunk.objects.filter(kb_id=kb_id, vector_model=model, vector_dim=dim)
        with self._lock:
            cached = self._entries.get(kb_id)
            if cached and cached[0] == stamp:
                return cached[1], cached[2]
        ids, decoded = [], []
        for chunk_id, data, dim in rows.values_list("id", "vector", "vector_dim").iterator():
            ids.append(chunk_id)
            decoded.append(unpack(data, dim))
        matrix = numpy.asarray(decoded, dtype=numpy.float32) if numpy is not None else decoded
        with self._lock:
            self._entries[kb_id] = (stamp, ids, matrix)
        return ids, matrix


_cache = _VectorCache()


def search(*, kb_ids: list[int], query: str, limit: int) -> list[Hit]:
    """The `limit` chunks nearest to the query by cosine similarity, best first."""
    if not kb_ids:
        return []
    (query_vector,) = embed([query])
    best: list[tuple[float, int]] = []
    for kb_id in kb_ids:
        ids, matrix = _cache.vectors(kb_id, settings.EMBEDDINGS_MODEL, len(query_vector))
        if not ids:
            continue
        if numpy is not None:
            scores = (matrix @ numpy.asarray(query_vector, dtype=numpy.float32)).tolist()
        else:
            scores = [sum(map(mul, query_vector, row)) for row in matrix]
        best = heapq.nlargest(limit, [*best, *zip(scores, (-i for i in ids), strict=True)])
    return [Hit(-negative_id, score) for score, negative_id in best]


def fuse(*rankings: list[Hit], k: int = RRF_K) -> list[Hit]:
    """Reciprocal rank fusion: each chunk scores sum(1 / (k + rank)) over the rankings."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1.0 / (k + rank)
    return [Hit(i, s) for i, s in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]
