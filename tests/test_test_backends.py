"""The test run's flush (tests/backends): every table emptied but the catalogue ones."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.management.color import no_style
from django.core.management.sql import sql_flush
from django.db import connection

from agents.models import Agent


@pytest.mark.django_db(transaction=True)
def test_a_flush_empties_the_tables_and_keeps_content_types_and_permissions():
    kinds, permissions = ContentType.objects.count(), Permission.objects.count()
    assert kinds > 20 and permissions > 80
    User.objects.create(username="u")
    Agent.objects.create(name="a", display_name="A")
    call_command("flush", verbosity=0, interactive=False, reset_sequences=False)
    assert not User.objects.exists() and not Agent.objects.exists()
    assert (ContentType.objects.count(), Permission.objects.count()) == (kinds, permissions)


@pytest.mark.django_db
def test_the_end_of_a_test_deletes_and_an_explicit_reset_still_truncates():
    statements = sql_flush(no_style(), connection, reset_sequences=False)
    assert statements and all(s.startswith("DELETE FROM") for s in statements)
    assert not any("django_content_type" in s or "auth_permission" in s for s in statements)
    reset = sql_flush(no_style(), connection, reset_sequences=True)
    if connection.vendor == "postgresql":
        assert reset[0].startswith("TRUNCATE") and "django_content_type" not in reset[0]
