"""Lexical retrieval on Postgres: BM25 over the GIN-indexed tsvector of the chunks, with work
bounded by the query, not the corpus.

Ranking reads each candidate's tsvector, so the candidates are bounded: a term found in few
chunks brings them all; a common term brings only the chunks where it weighs most, found through
the impact terms the tsvector carries (`<term>ǀ5`: the term's BM25 weight in that passage, in
levels; migration 0006) from the highest level down. Pairs of consecutive terms (a CJK phrase,
an English phrase) bring candidates the same way. Document frequencies are exact for the terms
found in few chunks, and the planner's statistics (`pg_stats`) for the common ones."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import connection

from agents.knowledge.retrieval.base import BM25_B, BM25_K1, TITLE_WEIGHT, Hit
from agents.knowledge.text import MARK, TITLE_MARK, title_term

# Collection size and total length from the few document rows, not by scanning the chunks.
_STATS = (
    "SELECT coalesce(sum(chunk_count), 0), coalesce(sum(token_count), 0) FROM knowledge_document "
    "WHERE kb_id = ANY(%s) AND status = 'indexed' AND NOT superseded"
)
# Impact levels of migration 0006, highest first, in the groups probed together.
LEVELS = (8, 7, 6, 5, 4, 3, 2, 1)
LEVEL_STEPS = ((8, 7), (6,), (5,), (4,), (3,), (2,), (1,))
LOW_LEVEL = 3
VERY_COMMON = 0.05  # share of chunks
# How many chunks one search ranks at most, shared by its units (terms, pairs, title words).
CANDIDATES = 400

_PROBE = (
    "(SELECT %s::int, %s::int, id FROM knowledge_chunk "
    "WHERE kb_id = ANY(%s) AND search_vector @@ %s::tsquery LIMIT %s)"
)

_RANK = f"""
WITH cand AS (
    SELECT id, token_count,
        ts_filter(setweight(search_vector, 'A', %(lexemes)s::text[]), '{{a}}') AS hits
    FROM knowledge_chunk WHERE id = ANY(%(ids)s)
),
tf AS (
    SELECT cand.id, cand.token_count, u.lexeme, cardinality(u.positions) AS tf
    FROM cand CROSS JOIN LATERAL unnest(cand.hits) AS u(lexeme, positions, weights)
),
df AS (SELECT * FROM unnest(%(lexemes)s::text[], %(dfs)s::float8[]) AS d(lexeme, df))
SELECT tf.id, sum(
    ln(1 + (%(n)s::float8 - df.df + 0.5) / (df.df + 0.5))
    * CASE WHEN tf.lexeme LIKE %(titled)s THEN {TITLE_WEIGHT}::float8 ELSE
        tf.tf * {BM25_K1 + 1}::float8
        / (tf.tf + {BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * tf.token_count
           / %(avgdl)s::float8))
    END
) AS score
FROM tf JOIN df USING (lexeme)
GROUP BY tf.id ORDER BY score DESC, tf.id LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Unit:
    """What brings candidates: one lexeme, or two consecutive terms (`pair`)."""

    lexemes: tuple[str, ...]
    leveled: bool  # whether it has impact levels (a title word is in every passage alike)

    def query(self, level: int = 0) -> str:
        """Its tsquery: as it is, or weighing `level` (a pair: each term at least that)."""
        if not level:
            return " & ".join(f"'{lexeme}'" for lexeme in self.lexemes)
        if len(self.lexemes) == 1:
            return f"'{self.lexemes[0]}{MARK}{level}'"
        above = [lv for lv in LEVELS if lv >= level]
        return " & ".join(
            "(" + " | ".join(f"'{lexeme}{MARK}{lv}'" for lv in above) + ")"
            for lexeme in self.lexemes
        )


def units_of(terms: list[str]) -> list[Unit]:
    """Each term, each pair of consecutive terms and each term as a title word."""
    return [
        *(Unit((term,), True) for term in terms),
        *(Unit(pair, True) for pair in zip(terms, terms[1:], strict=False)),
        *(Unit((title_term(term),), False) for term in terms),
    ]


class CommonTerms:
    """The planner's share of chunks holding each common lexeme (`pg_stats`' most common
    elements of the tsvector), read at most once a `ttl` per process."""

    def __init__(self, ttl: float = 300.0) -> None:
        self.ttl = ttl
        self._read_at = float("-inf")
        self._shares: dict[str, float] = {}
        self._floor = 0.0  # what the planner assumes for a lexeme not listed

    def share(self, cursor, lexeme: str) -> float:  # noqa: ANN001  (a DB-API cursor)
        """The estimated share of chunks holding `lexeme` (0 when never analysed)."""
        if time.monotonic() - self._read_at > self.ttl:
            self._read(cursor)
        return self._shares.get(lexeme, self._floor)

    def _read(self, cursor) -> None:  # noqa: ANN001
        cursor.execute(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
            "WHERE schemaname = current_schema() AND tablename = 'knowledge_chunk' "
            "AND attname = 'search_vector'"
        )
        row = cursor.fetchone()
        elements, freqs = row if row and row[0] else ([], [])
        self._shares = dict(zip(elements, freqs, strict=False))
        # The last three numbers are the minimum and maximum shares, then the null share.
        self._floor = freqs[-3] / 2 if freqs else 0.0
        self._read_at = time.monotonic()


_COMMON = CommonTerms()


class CollectionSizes:
    """Chunks and index terms of a set of knowledge bases (BM25's N and average length), read
    at most once a `ttl` per set and process: summing them over tens of thousands of documents
    costs more than a search, and they change slowly."""

    def __init__(self, ttl: float = 30.0) -> None:
        self.ttl = ttl
        self._sizes: dict[tuple[int, ...], tuple[float, int, int]] = {}

    def of(self, cursor, kb_ids: list[int]) -> tuple[int, int]:  # noqa: ANN001
        """(chunks, index terms) of these knowledge bases' indexed, current documents."""
        key = tuple(sorted(kb_ids))
        read_at, n, tokens = self._sizes.get(key, (float("-inf"), 0, 0))
        if time.monotonic() - read_at > self.ttl:
            cursor.execute(_STATS, [list(key)])
            n, tokens = cursor.fetchone()
            if len(self._sizes) > 1000:  # many distinct sets: start afresh
                self._sizes.clear()
            self._sizes[key] = (time.monotonic(), n, tokens)
        return n, tokens


_SIZES = CollectionSizes()


class PostgresBackend:
    """BM25 like FTS5's over bounded candidates from the GIN index."""

    def search(self, *, kb_ids: list[int], terms: list[str], limit: int) -> list[Hit]:
        """The best `limit` chunks of these knowledge bases, best first."""
        if not kb_ids or not terms:
            return []
        with connection.cursor() as cursor:
            n, tokens = _SIZES.of(cursor, kb_ids)
            if not n:
                return []
            units = units_of(terms)
            quota = min(limit, max(limit // 4, CANDIDATES // len(units)))
            found, common = _probe(cursor, kb_ids, units, quota, n)
            ids = {chunk for unit in units for chunk in found[unit]}
            if not ids:
                return []
            single = [unit for unit in units if len(unit.lexemes) == 1]
            lexemes = [unit.lexemes[0] for unit in single]
            # How many chunks hold each lexeme: exact when it is not common, else the planner's
            # estimate (never below what one probe found).
            df = {
                unit.lexemes[0]: max(quota + 1.0, _COMMON.share(cursor, unit.lexemes[0]) * n)
                if unit in common
                else float(len(found[unit]))
                for unit in single
            }
            # A title word weighs TITLE_WEIGHT of its idf in every passage of its document alike,
            # and as rare as the word is (not as titles holding it are).
            dfs = [df.get(lexeme.removesuffix(TITLE_MARK), df[lexeme]) for lexeme in lexemes]
            cursor.execute(
                _RANK,
                {
                    "ids": sorted(ids),
                    "lexemes": lexemes,
                    "dfs": dfs,
                    "n": float(n),
                    "avgdl": max(float(tokens) / n, 1.0),
                    "limit": limit,
                    "titled": f"%{TITLE_MARK}",
                },
            )
            return [Hit(chunk_id, float(score)) for chunk_id, score in cursor.fetchall()]


def _probe(
    cursor,  # noqa: ANN001  (a DB-API cursor)
    kb_ids: list[int],
    units: list[Unit],
    quota: int,
    n: int,
) -> tuple[dict[Unit, list[int]], set[Unit]]:
    """Each unit's candidates, and which units are common: all its chunks when it is in at most
    `quota`, else `quota` of those where it weighs most, from the highest impact level down,
    then any. A unit the planner's statistics call common (every term of it) is not fetched
    whole: reading past its first rows costs more than its levels do."""
    known = {unit for unit in units if _surely_common(cursor, unit, quota, n)}
    rows = _union(cursor, kb_ids, [(unit, 0, quota + 1) for unit in units if unit not in known])
    found = {unit: rows.get((unit, 0), []) for unit in units}
    common = known | {unit for unit in units if len(found[unit]) > quota}
    best: dict[Unit, dict[int, None]] = {unit: {} for unit in common}
    short = [unit for unit in common if unit.leveled]
    for levels in LEVEL_STEPS:
        short = [u for u in short if len(best[u]) < quota and _walks(cursor, u, levels[0])]
        if not short:
            break
        rows = _union(cursor, kb_ids, [(u, level, quota) for u in short for level in levels])
        for unit in short:
            for level in levels:
                best[unit].update(dict.fromkeys(rows.get((unit, level), [])))
    # Too few chunks where a term weighs more: ordinary mentions fill up. (A common title word
    # brings none: it weighs alike in all its passages, their own words rank them; nor does a
    # pair: its terms do.)
    fill = [u for u in common if u in known and u.leveled and len(u.lexemes) == 1]
    fill = [u for u in fill if len(best[u]) < quota]
    rows = _union(cursor, kb_ids, [(unit, 0, quota) for unit in fill])
    for unit in common:
        more = found[unit] or rows.get((unit, 0), [])
        best[unit].update(dict.fromkeys(c for c in more if len(best[unit]) < quota))
        found[unit] = list(best[unit])[:quota]
    return found, common


def _walks(cursor, unit: Unit, level: int) -> bool:  # noqa: ANN001
    """Whether a unit's candidates are read at this impact level. Below LOW_LEVEL a pair, or a
    term in more than VERY_COMMON of the chunks, is not walked: its low levels hold most of its
    chunks, which costs more to read whole than its first ordinary mentions do."""
    if level >= LOW_LEVEL:
        return True
    return len(unit.lexemes) == 1 and _COMMON.share(cursor, unit.lexemes[0]) < VERY_COMMON


def _surely_common(cursor, unit: Unit, quota: int, n: int) -> bool:  # noqa: ANN001
    """Whether every term of the unit is in many more chunks than `quota`, by `pg_stats`."""
    return all(_COMMON.share(cursor, lexeme) * n > 4 * quota for lexeme in unit.lexemes)


def _union(cursor, kb_ids: list[int], probes: list[tuple[Unit, int, int]]) -> dict:  # noqa: ANN001
    """Chunk ids by (unit, level) for each (unit, level, limit) probe, in one statement."""
    if not probes:
        return {}
    sql = " UNION ALL ".join([_PROBE] * len(probes))
    params = []
    for number, (unit, level, limit) in enumerate(probes):
        params += [number, level, kb_ids, unit.query(level), limit]
    cursor.execute(sql, params)
    rows: dict[tuple[Unit, int], list[int]] = {}
    for number, level, chunk_id in cursor.fetchall():
        rows.setdefault((probes[number][0], level), []).append(chunk_id)
    return rows
