"""What every retrieval backend shares: the hit type and the backend interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

BM25_K1 = 1.2
BM25_B = 0.75
# What a query word in a passage's document title adds to the passage's score, in units of the
# word's idf: a bit more than a second mention of it adds to an ordinary passage (0.38), the
# weight the title had when it was one more word of every passage, but the same in every
# passage of the document, short or long.
TITLE_WEIGHT = 0.4


@dataclass(frozen=True)
class Hit:
    """A chunk found by one ranking, with that ranking's score (higher is better)."""

    chunk_id: int
    score: float


class LexicalBackend(Protocol):
    """Ranks chunks of knowledge bases by BM25 over the terms of agents.knowledge.text."""

    def search(self, *, kb_ids: list[int], terms: list[str], limit: int) -> list[Hit]:
        """The best `limit` chunks containing any of `terms`, best first."""
        ...
