"""config.db.sqlite_backend (writers queued on one lock) whose flush keeps the catalogue tables."""

from __future__ import annotations

from config.db.sqlite_backend import base
from tests.backends import CatalogueKeepingFlush


class DatabaseOperations(CatalogueKeepingFlush, base.DatabaseWrapper.ops_class):
    """SQLite operations whose flush keeps the catalogue tables."""


class DatabaseWrapper(base.DatabaseWrapper):
    """The project's SQLite connection with the test run's flush."""

    ops_class = DatabaseOperations
