"""The id lists of a dispatcher batch (`config.db.AnyOf`): the rows listed, on either database,
bound on Postgres as one array rather than a placeholder per id."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from chat.models import ChatSession
from config.db import AnyOf
from reminders.models import Reminder
from tests.reminders.test_dispatch import make_reminder


@pytest.mark.django_db
def test_any_of_matches_the_listed_ids_of_any_type(user):
    ids = [make_reminder(user).pk for _ in range(4)]
    listed = Reminder.objects.filter(AnyOf(F("pk"), [ids[0], ids[2], 10**9]))
    assert sorted(listed.values_list("pk", flat=True)) == [ids[0], ids[2]]
    assert not Reminder.objects.filter(AnyOf(F("pk"), [])).exists()
    sessions = [ChatSession.objects.create(id=uuid.uuid4(), user=user).pk for _ in range(3)]
    found = ChatSession.objects.filter(AnyOf(F("pk"), sessions[:2])).values_list("pk", flat=True)
    assert sorted(found) == sorted(sessions[:2])


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the array is Postgres's")
def test_on_postgres_the_ids_are_one_array_parameter(user):
    ids = [make_reminder(user).pk for _ in range(3)]
    with CaptureQueriesContext(connection) as queries:
        assert Reminder.objects.filter(AnyOf(F("pk"), ids)).count() == 3
    (query,) = queries.captured_queries
    assert "= ANY(" in query["sql"] and " IN (" not in query["sql"]
