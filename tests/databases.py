"""The test database as a URL, for child processes (servers, commands) a test starts."""

from __future__ import annotations

from django.db import connection


def child_database_url() -> str:
    """DATABASE_URL of the database this test uses (its test database)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = (db.get("USER") or "postgres") + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return (
        f"postgres://{auth}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )
