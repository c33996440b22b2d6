"""A Celery worker keeps its database connection from one task to the next (Celery's Django
fixup closed it around every task: a new Postgres connection per task, and never a prepared
statement), and closes it as Django does between requests: when obsolete or unusable."""

from __future__ import annotations

import time

import pytest
from celery.fixups.django import DjangoWorkerFixup
from celery.signals import task_postrun, task_prerun
from django.db import connection

from config.celery_app import app
from delegation.tasks import advance_run

pytestmark = pytest.mark.django_db(transaction=True)


def opened():
    """The connection's current database session, opened if need be, kept for a minute (the
    app's DATABASE_CONN_MAX_AGE; the test settings may keep none)."""
    connection.ensure_connection()
    connection.close_at = time.monotonic() + 60
    return connection.connection


def task_ran(**request):
    """Celery's signals around one run of a real task (its request as a worker gives it)."""
    advance_run.push_request(**request)
    try:
        task_prerun.send(sender=advance_run, task_id="t", task=advance_run, args=(), kwargs={})
        task_postrun.send(
            sender=advance_run, task_id="t", task=advance_run, args=(), kwargs={}, retval=None
        )
    finally:
        advance_run.pop_request()


def test_celery_s_own_fixup_leaves_the_connection_open_between_tasks():
    fixup = DjangoWorkerFixup(app)
    assert fixup.db_reuse_max == app.conf.get("CELERY_DB_REUSE_MAX") >= 2**31
    session = opened()
    for _ in range(100):  # prerun and postrun of 50 tasks
        fixup.close_database()
    assert connection.connection is session
    fixup.db_reuse_max = None  # Celery's default: closed around every task
    fixup.close_database()
    assert connection.connection is None


def test_a_task_keeps_a_usable_connection_and_drops_an_obsolete_one():
    session = opened()
    task_ran(is_eager=False)
    assert connection.connection is session  # the next task reuses it
    connection.close_at = time.monotonic() - 1  # older than CONN_MAX_AGE
    task_ran(is_eager=False)
    assert connection.connection is None


def test_an_eager_task_leaves_its_caller_s_connection_alone():
    session = opened()
    connection.close_at = time.monotonic() - 1
    task_ran(is_eager=True)  # TASKS_RUN_SYNC: inside its caller's work
    assert connection.connection is session
