"""Lexical retrieval on SQLite: the FTS5 table of migration 0002, ranked by FTS5's bm25()."""

from __future__ import annotations

from django.db import connection

from agents.knowledge.retrieval.base import Hit


def match_expression(terms: list[str]) -> str:
    """An FTS5 query matching any term (quoted: terms are letters, digits or CJK only)."""
    return " OR ".join(f'"{term}"' for term in terms)


class SQLiteBackend:
    """FTS5 with BM25; the terms are made in Python, so two-character CJK words are terms."""

    def search(self, *, kb_ids: list[int], terms: list[str], limit: int) -> list[Hit]:
        """The best `limit` chunks of these knowledge bases, best first."""
        if not kb_ids or not terms:
            return []
        marks = ", ".join(["%s"] * len(kb_ids))
        sql = (
            "SELECT c.id, bm25(knowledge_chunk_fts) AS rank FROM knowledge_chunk_fts "
            "JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid "
            f"WHERE knowledge_chunk_fts MATCH %s AND c.kb_id IN ({marks}) "
            "ORDER BY rank, c.id LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [match_expression(terms), *kb_ids, limit])
            return [Hit(chunk_id, -rank) for chunk_id, rank in cursor.fetchall()]
