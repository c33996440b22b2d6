"""Passages indexed by their own words with their document's title words apart (a title weighs
alike in every passage of its document), and, on Postgres, impact levels in the tsvector
(`<term>ǀ<level>`: how much the term weighs in that passage) so a common term's best chunks are
found without ranking every chunk that holds it.

Every chunk's index text is derived again here (title words were part of every passage's words);
SQLite gains an FTS5 table of title words, and the Postgres column and its GIN index are rebuilt
after, once."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce

from agents.knowledge.text import passage_index_text

# Migration 0002's triggers again: adding the column rebuilt the chunk table without them.
SQLITE_WORDS = [
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_insert",
    "CREATE TRIGGER knowledge_chunk_fts_insert AFTER INSERT ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "CREATE TRIGGER knowledge_chunk_fts_delete AFTER DELETE ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); END",
    "CREATE TRIGGER knowledge_chunk_fts_update AFTER UPDATE OF search_text ON knowledge_chunk "
    "BEGIN INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); "
    "INSERT INTO knowledge_chunk_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts) VALUES ('rebuild')",
]
# Title words in an FTS5 table of their own: bm25() normalises by a row's length over all its
# columns, so in the words' table they would weigh more in short passages than in long ones.
SQLITE_ADD = [
    "CREATE VIRTUAL TABLE knowledge_chunk_title_fts USING fts5(search_title, "
    "content='knowledge_chunk', content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER knowledge_chunk_title_fts_insert AFTER INSERT ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_title_fts(rowid, search_title) "
    "VALUES (new.id, new.search_title); END",
    "CREATE TRIGGER knowledge_chunk_title_fts_delete AFTER DELETE ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_title_fts(knowledge_chunk_title_fts, rowid, search_title) "
    "VALUES ('delete', old.id, old.search_title); END",
    "CREATE TRIGGER knowledge_chunk_title_fts_update AFTER UPDATE OF search_title "
    "ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_title_fts(knowledge_chunk_title_fts, rowid, search_title) "
    "VALUES ('delete', old.id, old.search_title); "
    "INSERT INTO knowledge_chunk_title_fts(rowid, search_title) "
    "VALUES (new.id, new.search_title); END",
    "INSERT INTO knowledge_chunk_title_fts(knowledge_chunk_title_fts) VALUES ('rebuild')",
    # How many passages hold each word: a title word weighs as rare as the word is.
    "CREATE VIRTUAL TABLE knowledge_chunk_vocab USING fts5vocab(knowledge_chunk_fts, 'row')",
]
SQLITE_DROP = [
    "DROP TABLE IF EXISTS knowledge_chunk_vocab",
    "DROP TRIGGER IF EXISTS knowledge_chunk_title_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_chunk_title_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_chunk_title_fts_insert",
    "DROP TABLE IF EXISTS knowledge_chunk_title_fts",
]
POSTGRES_DROP = [
    "DROP INDEX IF EXISTS knowledge_chunk_search_gin",
    "ALTER TABLE knowledge_chunk DROP COLUMN IF EXISTS search_vector",
]
# Title words are marked `<term>ǀt` (with positions: ranking reads them as it reads words).
# Impact levels, as agents.knowledge.retrieval.postgres reads
# them: a lexeme's BM25 term weight in its passage (k1 1.2, b 0.75, against a reference length
# of 600 terms), tf*(k1+1) / (tf + k1*(1 - b + b*length/600)), from 1.0 up in steps of 0.15,
# levels 1..8; a term that weighs less than 1.15 (once in an ordinary passage) has none.
POSTGRES_ADD = [
    "CREATE OR REPLACE FUNCTION knowledge_search_vector(words text, title text, length integer) "
    "RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ "
    "SELECT v "
    "|| to_tsvector('simple'::regconfig, regexp_replace(title, '(\\S+)', '\\1ǀt', 'g')) "
    "|| coalesce((SELECT array_to_tsvector(array_agg(u.lexeme || 'ǀ' || i.level)) "
    "FROM unnest(v) AS u(lexeme, positions, weights) CROSS JOIN LATERAL ("
    "SELECT floor((cardinality(u.positions) * 2.2 / (cardinality(u.positions) "
    "+ 1.2 * (0.25 + 0.75 * greatest(length, 1) / 600.0)) - 1.0) / 0.15)::int AS level"
    ") AS i WHERE i.level >= 1), ''::tsvector) "
    "FROM to_tsvector('simple'::regconfig, words) AS v $$",
    "ALTER TABLE knowledge_chunk ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
    "(knowledge_search_vector(search_text, search_title, token_count)) STORED",
    "CREATE INDEX knowledge_chunk_search_gin ON knowledge_chunk USING gin (search_vector)",
    # More of the common lexemes in pg_stats: their shares are the common terms' frequencies.
    "ALTER TABLE knowledge_chunk ALTER COLUMN search_vector SET STATISTICS 1000",
]
POSTGRES_BACK = [  # migration 0002's column
    *POSTGRES_DROP,
    "DROP FUNCTION IF EXISTS knowledge_search_vector(text, text, integer)",
    "ALTER TABLE knowledge_chunk ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED",
    "CREATE INDEX knowledge_chunk_search_gin ON knowledge_chunk USING gin (search_vector)",
]


def _sql(by_vendor: dict[str, list[str]]):
    def run(apps, schema_editor) -> None:
        for sql in by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


def reindex_text(apps, schema_editor) -> None:
    """Each chunk's index text in the new form, from its document's title and its own text."""
    Chunk = apps.get_model("knowledge", "Chunk")
    Document = apps.get_model("knowledge", "Document")
    fields = ["search_text", "search_title", "token_count"]
    rows = Chunk.objects.select_related("document").only(
        "id", "heading_path", "text", "document__title"
    )
    batch = []
    for chunk in rows.iterator(chunk_size=2000):
        indexed = passage_index_text(chunk.document.title, chunk.heading_path, chunk.text)
        chunk.search_text, chunk.search_title, chunk.token_count = indexed
        batch.append(chunk)
        if len(batch) == 2000:
            Chunk.objects.bulk_update(batch, fields)
            batch = []
    Chunk.objects.bulk_update(batch, fields)
    totals = (
        Chunk.objects.filter(document=OuterRef("pk"))
        .values("document")
        .annotate(total=Sum("token_count"))
        .values("total")
    )
    Document.objects.update(token_count=Coalesce(Subquery(totals), 0))


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0005_names_per_language")]

    operations = [
        migrations.RunPython(_sql({"postgresql": POSTGRES_DROP}), _sql({"postgresql": POSTGRES_BACK})),
        migrations.AddField(
            model_name="chunk",
            name="search_title",
            field=models.TextField(
                blank=True, default="", editable=False, verbose_name="title index terms"
            ),
        ),
        migrations.RunPython(_sql({"sqlite": SQLITE_WORDS}), _sql({"sqlite": SQLITE_WORDS})),
        migrations.RunPython(reindex_text, migrations.RunPython.noop),
        migrations.RunPython(
            _sql({"sqlite": SQLITE_ADD, "postgresql": POSTGRES_ADD}),
            _sql({"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}),
        ),
    ]
