"""Helpers for tests that run beside other Postgres clients (workers, servers, dispatchers)."""

from __future__ import annotations

import time
from collections.abc import Collection

from django.db import connection


def other_sessions_closed(timeout: float = 5, *, names: Collection[str] = ()) -> bool:
    """Wait until no other client session uses the test database (a killed client's backend
    ends a moment later), or, given `names`, none of the sessions of the processes started with
    those names (`PGAPPNAME`: a server the module keeps may stay connected); True once they are
    gone, False after `timeout`. Postgres's own background work (autovacuum, parallel workers)
    is not a client and is not waited for. Always True off Postgres."""
    if connection.vendor != "postgresql":
        return True
    deadline = time.monotonic() + timeout
    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
    )
    if names:
        query += " AND application_name = ANY(%s)"
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(query, [list(names)] if names else None)
            if cursor.fetchone()[0] == 0:
                return True
            time.sleep(0.05)
    return False
