"""Lexical retrieval on SQLite: the FTS5 tables of migrations 0002 (a passage's words) and 0006
(its document's title words), ranked by FTS5's bm25()."""

from __future__ import annotations

import math

from django.db import connection

from agents.knowledge.retrieval.base import TITLE_WEIGHT, Hit


def match_expression(terms: list[str]) -> str:
    """An FTS5 query matching any term, in a passage's words or its title's (quoted: terms are
    letters, digits or CJK only)."""
    return " OR ".join(f'"{term}"' for term in terms)


# BM25 of a passage's words, plus for each query word in its document's title TITLE_WEIGHT of
# the word's idf over the passages' words: alike in every passage of the document, and as rare
# as the word is, not as titles holding it are. (Titles have an FTS5 table of their own: bm25()
# normalises by a row's whole length.)
_WORDS = (
    "SELECT rowid AS id, -bm25(knowledge_chunk_fts) AS score FROM knowledge_chunk_fts "
    "WHERE knowledge_chunk_fts MATCH %s"
)
_TITLE = "SELECT rowid, %s FROM knowledge_chunk_title_fts WHERE knowledge_chunk_title_fts MATCH %s"
_RANK = """
SELECT c.id, sum(found.score) AS score FROM ({parts}) AS found
JOIN knowledge_chunk c ON c.id = found.id
WHERE c.kb_id IN ({marks})
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %s
"""


class SQLiteBackend:
    """FTS5 with BM25; the terms are made in Python, so two-character CJK words are terms."""

    def search(self, *, kb_ids: list[int], terms: list[str], limit: int) -> list[Hit]:
        """The best `limit` chunks of these knowledge bases, best first."""
        if not kb_ids or not terms:
            return []
        with connection.cursor() as cursor:
            weights = _idf(cursor, terms)
            parts = [_WORDS]
            params: list[str | float] = [match_expression(terms)]
            for term in terms:
                parts.append(_TITLE)
                params += [TITLE_WEIGHT * weights.get(term, 0.0), match_expression([term])]
            sql = _RANK.format(
                parts=" UNION ALL ".join(parts), marks=", ".join(["%s"] * len(kb_ids))
            )
            cursor.execute(sql, [*params, *kb_ids, limit])
            return [Hit(chunk_id, score) for chunk_id, score in cursor.fetchall()]


def _idf(cursor, terms: list[str]) -> dict[str, float]:  # noqa: ANN001  (a DB-API cursor)
    """BM25's idf of each term over the passages' words (FTS5's, floored at a small weight)."""
    cursor.execute("SELECT count(*) FROM knowledge_chunk")
    (n,) = cursor.fetchone()
    marks = ", ".join(["%s"] * len(terms))
    cursor.execute(f"SELECT term, doc FROM knowledge_chunk_vocab WHERE term IN ({marks})", terms)
    df = dict(cursor.fetchall())
    return {
        term: max(1e-6, math.log((n - df.get(term, 0) + 0.5) / (df.get(term, 0) + 0.5)))
        for term in terms
    }
