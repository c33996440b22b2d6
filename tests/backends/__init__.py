"""The test run's database backends: Django's (and config.db.sqlite_backend), with a cheaper flush.

A transactional test ends with a flush: every table emptied, then the post_migrate signal
fills the content types and permissions in again, about 140 queries. The flush here leaves
those two tables as they are (post_migrate then finds every row and inserts nothing) and, on
Postgres, deletes rows instead of truncating (postgresql/base.py says why). Measured per flush:
Postgres 0.55 s → about 0.07 s, SQLite 0.09 s → about 0.02 s. The servers and workers that
tests start use config.settings, so they run the production backends unchanged.
"""

from __future__ import annotations

from typing import Any

# Filled by post_migrate from the code's models, the same rows after every flush.
CATALOGUE_TABLES = frozenset({"django_content_type", "auth_permission"})


class CatalogueKeepingFlush:
    """A DatabaseOperations mixin whose flush leaves the catalogue tables alone."""

    def sql_flush(
        self, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        """Django's flush of every table but the catalogue ones."""
        kept = [table for table in tables if table not in CATALOGUE_TABLES]
        return super().sql_flush(  # type: ignore[misc]
            style, kept, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
