"""The full-text index of chunks, per database: SQLite FTS5 or a Postgres tsvector with GIN.

Both index `knowledge_chunk.search_text` (terms made in Python) and are kept in step with the
chunk rows inside the writing transaction: by triggers on SQLite, by a generated column on
Postgres.
"""

from django.db import migrations

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE knowledge_chunk_fts USING fts5(search_text, content='knowledge_chunk', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER knowledge_chunk_fts_insert AFTER INSERT ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "CREATE TRIGGER knowledge_chunk_fts_delete AFTER DELETE ON knowledge_chunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); END",
    "CREATE TRIGGER knowledge_chunk_fts_update AFTER UPDATE OF search_text ON knowledge_chunk "
    "BEGIN INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts, rowid, search_text) "
    "VALUES ('delete', old.id, old.search_text); "
    "INSERT INTO knowledge_chunk_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_insert",
    "DROP TABLE IF EXISTS knowledge_chunk_fts",
]
POSTGRES_FORWARD = [
    "ALTER TABLE knowledge_chunk ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED",
    "CREATE INDEX knowledge_chunk_search_gin ON knowledge_chunk USING gin (search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS knowledge_chunk_search_gin",
    "ALTER TABLE knowledge_chunk DROP COLUMN IF EXISTS search_vector",
]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor) -> None:
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
