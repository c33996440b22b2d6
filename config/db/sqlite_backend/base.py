"""Django's SQLite backend, with the process's writers queued on one lock.

SQLite allows one writer per database. Threads that find it taken wait in SQLite's busy
handler, which sleeps in growing steps (up to 100 ms a step) and wakes late, so under load a
streaming thread could stall for a second while the lock sat free. Here a thread takes a
process-wide lock before it writes (a `BEGIN IMMEDIATE` transaction, or a single write in
autocommit) and gives it back when the write commits or rolls back; the next writer wakes as
soon as it is free. Other processes on the same file still meet SQLite's busy handler.
Readers never wait (WAL). docs/decisions/0006-performance.md has the measurements. The hooks
overridden here are the backend's private ones; `config.db` checks the Django version at import.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from django.db.backends.sqlite3 import base

_WRITER = threading.Lock()  # one per process: SQLite has one writer per database
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC")


def _take(timeout: float) -> None:
    if not _WRITER.acquire(timeout=timeout):
        raise sqlite3.OperationalError("database is locked")


class WriterQueueingCursor(base.SQLiteCursorWrapper):
    """A cursor that queues a write made outside a transaction on the process's writer lock."""

    busy_timeout = 5.0

    def execute(self, query: str, params: Any = None) -> Any:
        return self._as_writer(query, super().execute, query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        return self._as_writer(query, super().executemany, query, param_list)

    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        """Django's conversion to SQLite's `?` placeholders, remembered per statement text: a
        process runs the same few hundred statements again and again, and the regex took
        7–46 µs a statement (the claim's 130 columns), about 0.7 ms of a depth-1 turn."""
        if param_names is not None:
            return super().convert_query(query, param_names=param_names)
        return _qmark(query)

    def _as_writer(self, query: str, call: Callable[..., Any], *args: Any) -> Any:
        """Run `call`, holding the writer lock when it writes outside a transaction."""
        if self.connection.in_transaction or not _is_write(query):
            return call(*args)
        _take(self.busy_timeout)
        try:
            return call(*args)
        finally:
            _WRITER.release()


@functools.lru_cache(maxsize=2048)
def _qmark(query: str) -> str:
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


def _is_write(query: str) -> bool:
    return query.lstrip()[:6].upper() in _WRITES


class DatabaseWrapper(base.DatabaseWrapper):
    """SQLite whose transactions hold the process's writer lock from BEGIN to COMMIT."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holds_writer = False

    @property
    def busy_timeout(self) -> float:
        """How long a writer waits for the lock before "database is locked" (SQLite's own)."""
        return float(self.settings_dict["OPTIONS"].get("timeout", 5.0))

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=WriterQueueingCursor)
        cursor.busy_timeout = self.busy_timeout
        return cursor

    def _start_transaction_under_autocommit(self) -> None:
        _take(self.busy_timeout)
        self._holds_writer = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._give_writer()
            raise

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._give_writer()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._give_writer()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._give_writer()

    def _give_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            _WRITER.release()
