"""A Redis (broker) restart while a turn is in flight: the worker survives, the turn completes,
and the next turn runs on the same worker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
import redis
from django.db import transaction
from kombu.exceptions import OperationalError

from config.celery_app import app
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from tests.fake_openai import Reply, text
from tests.server_logs import output_path

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def start_turn(user, words: str) -> Run:
    with transaction.atomic():
        sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=words)
    return sent.run


def responds(name: str) -> bool:
    """The worker answers a ping (this process's pooled connection may still be the old one)."""
    try:
        replies = app.control.ping(timeout=1.0)
    except (redis.ConnectionError, OperationalError):
        return False
    return any(name in host for reply in replies for host in reply)


def test_worker_survives_a_redis_restart_mid_turn_and_the_turn_completes(
    workers, broker, user, openai_entry_agent, fake_openai
):
    # The model is slow to answer: the task is in flight while Redis goes away.
    fake_openai.script(
        Reply(text_chunks=["first half, ", "second half"], stall_seconds=6), text("the next turn")
    )
    worker = workers.start(
        "w1",
        REDIS_URL=broker.url,
        OPENAI_BASE_URL=fake_openai.base_url,
        OPENAI_API_KEY="test-key",
        OPENAI_MAX_RETRIES="0",
    )
    run = start_turn(user, "tell me both halves")
    wait_until(lambda: len(fake_openai.requests) == 1, 20, "the model call")

    log = output_path("celery-w1.log")
    logged = log.stat().st_size
    broker.kill()
    wait_until(
        lambda: b"Connection to broker lost" in log.read_bytes()[logged:],
        30,
        "the worker to notice the lost connection and start reconnecting",
    )
    broker.start()  # same port, empty (no persistence): as a container restart

    wait_until(lambda: Run.objects.get(pk=run.pk).is_final, 60, "the turn to end")
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert run.messages.get(role="agent").content == "first half, second half"
    assert worker.poll() is None, f"the worker died; see {output_path('celery-w1.log')}"
    wait_until(lambda: responds("w1"), 30, "the worker to answer a ping")

    following = start_turn(user, "and now?")
    wait_until(lambda: Run.objects.get(pk=following.pk).is_final, 30, "the next turn")
    assert Run.objects.get(pk=following.pk).status == RunStatus.SUCCEEDED
