"""Fixtures for multi-process tests: a real Celery worker on the test database and Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    db = settings.DATABASES["default"]
    port = db.get("PORT") or 5432
    return f"postgres://{db.get('USER') or 'postgres'}@{db.get('HOST') or '127.0.0.1'}:{port}/{db['NAME']}"


def require_distributed() -> None:
    """Skip, visibly, unless this run is on Postgres with Redis (make test's second pass)."""
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"] or not settings.REDIS_URL:
        pytest.skip("needs DATABASE_URL=postgres://… and REDIS_URL (run `make test`)")


@pytest.fixture
def flush_redis() -> Iterator[None]:
    """An empty Redis database for the broker and the channel layer."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    yield
    client.flushdb()


@pytest.fixture
def celery_worker(django_db_setup, flush_redis) -> Iterator[subprocess.Popen]:
    """A real `celery worker` process (prefork, 2 children) on the test database."""
    require_distributed()
    env = {
        **os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": settings.REDIS_URL,
        "OFFLINE_MODEL_DELAY_MS": "0", "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    log = open(ROOT / "test-output" / "celery-worker.log", "ab") if _log_dir() else subprocess.DEVNULL
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel=INFO",
         "--concurrency=2", "--without-mingle", "--without-gossip", "--hostname=test@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(process)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _log_dir() -> bool:
    (ROOT / "test-output").mkdir(exist_ok=True)
    return True


def _wait_ready(process: subprocess.Popen, timeout: float = 30) -> None:
    from config.celery_app import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("celery worker exited; see test-output/celery-worker.log")
        if app.control.ping(timeout=0.5):
            return
    raise RuntimeError("celery worker did not become ready")
