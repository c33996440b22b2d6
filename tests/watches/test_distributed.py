"""Watches across processes on Postgres and Redis: the check turn runs on a real Celery worker,
its end (the engine's hook, in the worker) finishes the check there, and the notification
reaches the user's socket in this process through channels_redis; two ticks at once start one
check."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async

from reminders.watches.checks import watches_tick
from reminders.watches.models import CheckStatus, Notification, WatchCheck
from tests.chat.helpers import connect
from tests.e2e.conftest import celery_worker, flush_redis, workers  # noqa: F401 (fixtures)
from tests.watches.conftest import FIRST_SLOT, overdue_task

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


async def test_a_check_on_a_worker_reaches_the_users_socket(celery_worker, watch, alice):  # noqa: F811
    await database_sync_to_async(overdue_task)(alice, "File the tax return")
    ws = await connect(alice)
    counts = await database_sync_to_async(watches_tick)(now=FIRST_SLOT + timedelta(minutes=1))
    assert counts["started"] == 1
    while True:  # the check's own turn is in another session: only the notification comes
        event = await ws.receive_json_from(timeout=30)
        if event["type"] == "watch.notification":
            break
    assert event["data"]["watch_id"] == watch.pk
    assert "File the tax return" in event["data"]["title"]
    check = await database_sync_to_async(WatchCheck.objects.get)()
    assert check.status == CheckStatus.TOLD
    assert await database_sync_to_async(Notification.objects.count)() == 1
    assert await ws.receive_nothing(timeout=1)  # told once
    await ws.disconnect()


def test_two_ticks_at_once_start_one_check(celery_worker, watch, alice):  # noqa: F811
    at = FIRST_SLOT + timedelta(minutes=1)
    barrier = threading.Barrier(2)
    counts: list[int] = []

    def beat() -> None:
        from django.db import connection

        barrier.wait()
        try:
            counts.append(watches_tick(now=at)["started"])
        finally:
            connection.close()

    threads = [threading.Thread(target=beat) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(counts) == [0, 1]
    assert WatchCheck.objects.count() == 1
