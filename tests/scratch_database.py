"""A second, empty database beside the test database, for tests that migrate from an old state
without unapplying the whole project's history from the test database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend


@contextmanager
def scratch_database() -> Iterator[BaseDatabaseWrapper]:
    """An empty database of the test database's vendor, as a connection; dropped afterwards."""
    alias = f"scratch_{uuid.uuid4().hex[:8]}"
    settings = {**connection.settings_dict, "TEST": {**connection.settings_dict.get("TEST", {})}}
    if connection.vendor == "sqlite":
        settings["NAME"] = str(Path(str(connection.settings_dict["NAME"])).with_name(alias + ".db"))
    else:
        settings["NAME"] = alias
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{alias}"')
    # A connection made at run time, not a configured alias: Django's test case allows those.
    scratch = load_backend(settings["ENGINE"]).DatabaseWrapper(settings, alias)
    connections[alias] = scratch
    try:
        yield scratch
    finally:
        scratch.close()
        del connections[alias]
        if connection.vendor == "sqlite":
            Path(settings["NAME"]).unlink(missing_ok=True)
        else:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE "{alias}" WITH (FORCE)')
