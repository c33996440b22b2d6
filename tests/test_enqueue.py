"""The enqueue seam: tasks by name, work kept by the task body that made it, and a broker outage
that never fails the caller's turn."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import shared_task
from django.db import transaction

from chat.models import ChatSession
from config.celery_app import app
from config.enqueue import enqueue, task_by_name, wait_for_in_process_tasks
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from tests.factories import make_agent

ROOT = Path(__file__).resolve().parents[1]


def test_a_task_name_resolves_without_its_module_imported_first():
    code = (
        "import sys, django; django.setup(); "
        "from config.enqueue import task_by_name; "
        "assert 'delegation.tasks' not in sys.modules; "
        "print(task_by_name('delegation.advance_run').name)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "CELERY_"))}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "delegation.advance_run"


def test_an_unknown_task_name_is_a_clear_error():
    with pytest.raises(LookupError, match="no Celery task is registered as 'nope.nothing'"):
        task_by_name("nope.nothing")


RAN: list[str] = []


@shared_task(name="tests.enqueue_probe")
def probe(value: str) -> None:
    """Records that it ran."""
    RAN.append(value)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sync", [True, False], ids=["sync", "in-process pool"])
def test_a_task_enqueued_by_name_runs_after_commit(settings, sync):
    settings.TASKS_RUN_SYNC = sync
    RAN.clear()
    with transaction.atomic():
        enqueue("tests.enqueue_probe", "hello")
        assert RAN == []
    wait_for_in_process_tasks()
    assert RAN == ["hello"]


@shared_task(name="tests.enqueue_other_probe")
def other_probe(value: str) -> None:
    """Records that it ran, under another task name."""
    RAN.append(f"other:{value}")


@pytest.fixture
def broker_down(settings) -> Iterator[str]:
    """The Celery app pointed at a closed port, publishing without retries (fast)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    saved = {k: app.conf[k] for k in ("broker_url", "task_publish_retry_policy")}
    app.conf.broker_url = url
    app.conf.task_publish_retry_policy = {"max_retries": 0}
    app._pool, app.amqp._producer_pool = None, None
    settings.CELERY_BROKER_URL = url
    yield url
    app.conf.update(saved)
    app._pool, app.amqp._producer_pool = None, None


@pytest.mark.django_db(transaction=True)
def test_a_broker_outage_leaves_the_run_queued_and_logs_one_line(user, broker_down, caplog):
    run = new_run(user)
    caplog.set_level(logging.WARNING)
    with transaction.atomic():  # as a turn does: the send happens on commit
        enqueue("delegation.advance_run", str(run.id))
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED  # the sweeper re-sends it after QUEUED_STALE_SECONDS
    warned = [r for r in caplog.records if r.name == "config.enqueue"]
    assert len(warned) == 1 and "broker unavailable" in warned[0].getMessage()
    assert all(r.exc_info is None for r in caplog.records)


def new_run(user) -> Run:
    agent = make_agent()
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    return run_create(agent=agent, user=user, session=session, task="t", transcript=[])


RACE = """
import threading, django
django.setup()
from config.enqueue import task_by_name
barrier, failed = threading.Barrier(30), []
def first_send():
    barrier.wait()
    try:
        task_by_name("delegation.advance_run")
    except LookupError as exc:
        failed.append(exc)
threads = [threading.Thread(target=first_send) for _ in range(30)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(failed))
"""


def test_thirty_threads_of_a_fresh_web_process_find_a_task_at_once():
    """The first sends after a web process starts look their task up from many request threads
    at once (each used to discover the tasks modules itself, and 29 of 30 found nothing)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEBUG": "true"}
    out = subprocess.run(
        [sys.executable, "-c", RACE], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "0"
