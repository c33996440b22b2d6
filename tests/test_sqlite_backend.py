"""The SQLite backend's writer lock: held from BEGIN to COMMIT or ROLLBACK, taken for a write
outside a transaction, given back on every way out, and a clear error when it stays taken."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError, connection, transaction

from config.db.sqlite_backend.base import _WRITER

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "sqlite", reason="tests the SQLite backend; this pass runs Postgres"
    ),
]


def test_a_transaction_holds_the_writer_lock_until_it_commits():
    with transaction.atomic():
        assert _WRITER.locked()
        get_user_model().objects.create(username="a")
        with transaction.atomic():  # a savepoint takes nothing more
            get_user_model().objects.create(username="b")
    assert not _WRITER.locked()
    assert get_user_model().objects.count() == 2


def test_a_rolled_back_transaction_gives_the_lock_back():
    with pytest.raises(RuntimeError), transaction.atomic():
        get_user_model().objects.create(username="a")
        raise RuntimeError
    assert not _WRITER.locked()
    assert not get_user_model().objects.exists()


def test_a_write_outside_a_transaction_takes_and_gives_back_the_lock():
    get_user_model().objects.create(username="a")  # autocommit
    assert not _WRITER.locked()
    assert get_user_model().objects.filter(username="a").update(first_name="A") == 1
    assert not _WRITER.locked()


def test_closing_a_connection_inside_a_transaction_gives_the_lock_back():
    transaction.set_autocommit(True)
    connection._start_transaction_under_autocommit()
    assert _WRITER.locked()
    connection.close()
    assert not _WRITER.locked()


def test_a_writer_that_waits_longer_than_the_timeout_gets_database_is_locked(monkeypatch):
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "timeout", 0.2)
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            holding.set()
            done.wait(10)
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        with pytest.raises(OperationalError, match="database is locked"):
            get_user_model().objects.create(username="late")
        assert not get_user_model().objects.filter(username="late").exists()  # reads go on
    finally:
        done.set()
        holder.join(10)
    get_user_model().objects.create(username="after")  # free again once the holder committed


def test_placeholders_are_converted_as_django_does_and_each_statement_text_once():
    """`%s` becomes `?` and `%%` a literal `%`, as in Django's own cursor, remembered per text;
    a statement with a percent sign in a literal and one with named parameters still work."""
    from django.db.backends.sqlite3.base import SQLiteCursorWrapper

    from config.db.sqlite_backend.base import _qmark

    sql = "SELECT %s, '100%%' WHERE 1 = %s"
    with connection.cursor() as cursor:
        converted = cursor.cursor.convert_query(sql)
        assert converted == SQLiteCursorWrapper.convert_query(cursor.cursor, sql)
        assert converted == "SELECT ?, '100%' WHERE 1 = ?"
        hits = _qmark.cache_info().hits
        cursor.execute(sql, [7, 1])
        assert cursor.fetchone() == (7, "100%")
        cursor.execute(sql, [8, 1])
        assert _qmark.cache_info().hits >= hits + 2
        cursor.execute("SELECT %(a)s", {"a": 3})
        assert cursor.fetchone() == (3,)
