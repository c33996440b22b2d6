"""Lexical retrieval on Postgres: the GIN-indexed tsvector of migration 0002, ranked by BM25
computed in SQL. Term frequencies come from each candidate's tsvector cut down to the query's
lexemes (setweight + ts_filter, in C); document frequencies are counted over the candidates."""

from __future__ import annotations

from django.db import connection

from agents.knowledge.retrieval.base import BM25_B, BM25_K1, Hit

# Collection size and total length from the few document rows, not by scanning the chunks.
_STATS = (
    "SELECT coalesce(sum(chunk_count), 0), coalesce(sum(token_count), 0) FROM knowledge_document "
    "WHERE kb_id = ANY(%s) AND status = 'indexed' AND NOT superseded"
)

_RANK = f"""
WITH cand AS (
    SELECT id, token_count,
        ts_filter(setweight(search_vector, 'A', %(terms)s::text[]), '{{a}}') AS hits
    FROM knowledge_chunk
    WHERE kb_id = ANY(%(kbs)s) AND search_vector @@ %(tsq)s::tsquery
),
tf AS (
    SELECT cand.id, cand.token_count, u.lexeme, cardinality(u.positions) AS tf
    FROM cand CROSS JOIN LATERAL unnest(cand.hits) AS u(lexeme, positions, weights)
),
df AS (SELECT lexeme, count(*) AS df FROM tf GROUP BY lexeme)
SELECT tf.id, sum(
    ln(1 + (%(n)s::float8 - df.df + 0.5) / (df.df + 0.5))
    * tf.tf * {BM25_K1 + 1}::float8
    / (tf.tf + {BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * tf.token_count
       / %(avgdl)s::float8))
) AS score
FROM tf JOIN df USING (lexeme)
GROUP BY tf.id ORDER BY score DESC, tf.id LIMIT %(limit)s
"""


def tsquery_text(terms: list[str]) -> str:
    """A tsquery matching any term (lexemes quoted literally; terms hold no quotes)."""
    return " | ".join(f"'{term}'" for term in terms)


def pairs_tsquery_text(terms: list[str]) -> str:
    """A tsquery matching chunks with two consecutive query terms (for CJK: three characters in
    a row, usually), far fewer candidates than any single term."""
    return " | ".join(f"('{a}' & '{b}')" for a, b in zip(terms, terms[1:], strict=False))


# Enough coordinated passages (a page of results) to skip ranking chunks with just one term.
ENOUGH_COORDINATED = 5


class PostgresBackend:
    """Full text over the Python-made terms with a GIN index; BM25 like FTS5's."""

    def search(self, *, kb_ids: list[int], terms: list[str], limit: int) -> list[Hit]:
        """The best `limit` chunks of these knowledge bases, best first."""
        if not kb_ids or not terms:
            return []
        with connection.cursor() as cursor:
            cursor.execute(_STATS, [kb_ids])
            n, tokens = cursor.fetchone()
            if not n:
                return []
            avgdl = tokens / n
            params = {
                "terms": terms,
                "kbs": kb_ids,
                "n": float(n),
                "avgdl": max(float(avgdl), 1.0),
                "limit": limit,
            }
            # Ranking reads every candidate's tsvector: first try the chunks holding two
            # consecutive terms; only when too few do, rank every chunk holding any term.
            if len(terms) > 1:
                cursor.execute(_RANK, {**params, "tsq": pairs_tsquery_text(terms)})
                hits = [Hit(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]
                if len(hits) >= min(limit, ENOUGH_COORDINATED):
                    return hits
            cursor.execute(_RANK, {**params, "tsq": tsquery_text(terms)})
            return [Hit(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]
