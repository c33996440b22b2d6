"""Django's Postgres backend whose flush keeps the catalogue tables and empties the others with
DELETE instead of one TRUNCATE of them all.

TRUNCATE gives each table, index and TOAST table a new file and drops the old one's pages from
shared buffers by scanning all of them: about 0.3-0.5 s per flush of this schema here. The
tables a test leaves hold a few rows, which DELETE removes in a few milliseconds. Foreign keys
are DEFERRABLE INITIALLY DEFERRED and the flush runs in one transaction, so the order of the
DELETEs does not matter.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base, operations

from tests.backends import CatalogueKeepingFlush


class _DeletingOperations(operations.DatabaseOperations):
    def sql_flush(
        self, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        # Django's TRUNCATE where sequences must restart or a cascade is asked for (the flush
        # command's defaults; the end of a test asks for neither).
        if reset_sequences or allow_cascade:
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        return [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
            for table in tables
        ]


class DatabaseOperations(CatalogueKeepingFlush, _DeletingOperations):
    """Postgres operations whose flush keeps the catalogue and deletes the rest."""


class DatabaseWrapper(base.DatabaseWrapper):
    """Django's Postgres connection with the test run's flush."""

    ops_class = DatabaseOperations
