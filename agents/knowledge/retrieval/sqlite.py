"""Lexical retrieval on SQLite: the FTS5 tables of migrations 0002 (a passage's words) and 0006
(its document's title words), ranked by FTS5's bm25()."""

from __future__ import annotations

from django.db import connection

from agents.knowledge.retrieval.base import Hit


def match_expression(terms: list[str]) -> str:
    """An FTS5 query matching any term, in a passage's words or its title's (quoted: terms are
    letters, digits or CJK only)."""
    return " OR ".join(f'"{term}"' for term in terms)


# BM25 of the passage's words plus BM25 of its title's words, each in its own FTS5 table (bm25()
# normalises by a row's whole length: in one table the title would weigh more in short passages).
_RANK = """
SELECT c.id, sum(found.score) AS score FROM (
    SELECT rowid AS id, -bm25(knowledge_chunk_fts) AS score FROM knowledge_chunk_fts
    WHERE knowledge_chunk_fts MATCH %s
    UNION ALL
    SELECT rowid, -bm25(knowledge_chunk_title_fts) FROM knowledge_chunk_title_fts
    WHERE knowledge_chunk_title_fts MATCH %s
) AS found JOIN knowledge_chunk c ON c.id = found.id
WHERE c.kb_id IN ({marks})
GROUP BY c.id ORDER BY score DESC, c.id LIMIT %s
"""


class SQLiteBackend:
    """FTS5 with BM25; the terms are made in Python, so two-character CJK words are terms."""

    def search(self, *, kb_ids: list[int], terms: list[str], limit: int) -> list[Hit]:
        """The best `limit` chunks of these knowledge bases, best first."""
        if not kb_ids or not terms:
            return []
        match = match_expression(terms)
        sql = _RANK.format(marks=", ".join(["%s"] * len(kb_ids)))
        with connection.cursor() as cursor:
            cursor.execute(sql, [match, match, *kb_ids, limit])
            return [Hit(chunk_id, score) for chunk_id, score in cursor.fetchall()]
