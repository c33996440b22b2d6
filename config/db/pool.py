"""Threads that share a process's connection pool: a thread hands its connection back while it
waits on something else, and work run after commit takes none only to learn it is outside one.

A Celery worker on the threads pool runs hundreds of turns at once, each mostly waiting on a
model's stream; Django keeps a thread's connection until it is closed, so each would hold a
pooled connection through the whole wait (and Postgres allows about 100). Outside a
transaction, with the pool on, `connection_lend` gives it back; the thread's next query takes
one again (tens of microseconds; statements prepared on it stay prepared). Without the pool
(SQLite, or PgBouncer in front) a thread keeps its connection: closing would reopen it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection, transaction


def connection_lend() -> None:
    """Give this thread's connection back to the pool until its next query, when it is in no
    transaction and the process has a pool (docs/scaling.md)."""
    pooled = bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))
    if pooled and connection.connection is not None and not connection.in_atomic_block:
        connection.close()


def after_commit(send: Callable[[], None]) -> None:
    """Run `send` once the current transaction commits, or now outside one: Django's
    `on_commit` outside a transaction asks the connection whether it autocommits, taking one
    from the pool (a worker streaming a model's answer holds none)."""
    if connection.in_atomic_block:
        transaction.on_commit(send)
    else:
        send()
