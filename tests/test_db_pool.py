"""Work sent after commit runs at once outside a transaction without taking a database
connection to learn that (a worker streaming a model's answer holds none), and waits for the
commit inside one; a thread lends its connection only to a pool, and never mid-transaction."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from config.db.pool import after_commit, connection_lend


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_it_runs_now_and_opens_no_connection():
    connection.close()
    ran = []
    after_commit(lambda: ran.append("sent"))
    assert ran == ["sent"]
    assert connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_it_waits_for_the_commit_and_is_dropped_by_a_rollback():
    ran = []
    with transaction.atomic():
        after_commit(lambda: ran.append("committed"))
        assert ran == []
    assert ran == ["committed"]
    with pytest.raises(RuntimeError), transaction.atomic():
        after_commit(lambda: ran.append("rolled back"))
        raise RuntimeError
    assert ran == ["committed"]


@pytest.mark.django_db(transaction=True)
def test_without_a_pool_a_thread_keeps_its_connection():
    assert not connection.settings_dict.get("OPTIONS", {}).get("pool")  # the tests' settings
    connection.ensure_connection()
    kept = connection.connection
    connection_lend()
    assert connection.connection is kept


@pytest.mark.django_db(transaction=True)
def test_with_a_pool_it_lends_outside_a_transaction_only(monkeypatch):
    """With the pool on, closing gives the connection back; the tests keep no pool, so the close
    is recorded here instead of done (on Postgres Django would put it back into a pool)."""
    connection.ensure_connection()
    pooled = {**connection.settings_dict.get("OPTIONS", {}), "pool": {"min_size": 1}}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", pooled)
    lent = []
    monkeypatch.setattr(connection, "close", lambda: lent.append(connection.in_atomic_block))
    with transaction.atomic():
        connection_lend()
        assert lent == []  # mid-transaction: kept
    connection_lend()
    assert lent == [False]  # outside one: given back
