"""Helpers for tests that run beside other Postgres clients (workers, servers, dispatchers)."""

from __future__ import annotations

import time

from django.db import connection


def other_sessions_closed(timeout: float = 5) -> bool:
    """Wait until no other session uses the test database (a killed client's backend ends a
    moment later); True once they are gone, False after `timeout`. Always True off Postgres."""
    if connection.vendor != "postgresql":
        return True
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0] == 0:
                return True
            time.sleep(0.05)
    return False
