"""Embedded mode's stand-in for Celery beat: periodic jobs on a daemon thread in the server."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)

_started = False
_lock = threading.Lock()


def prevent_start() -> None:
    """Never start the timer in this process (test runs import config.asgi but are no server)."""
    global _started
    with _lock:
        _started = True


def start_in_process_beat(
    jobs: list[tuple[float, Callable[[], object]]], at_start: Sequence[Callable[[], object]] = ()
) -> bool:
    """Run each of `at_start` once, then each (interval seconds, job) forever, on one daemon
    thread, once per process, only when no broker is configured (with one, Celery drives the
    same)."""
    global _started
    with _lock:
        if _started or settings.CELERY_BROKER_URL:
            return False
        _started = True
    threading.Thread(
        target=_loop, args=(jobs, at_start), daemon=True, name="in-process-beat"
    ).start()
    return True


def _loop(
    jobs: list[tuple[float, Callable[[], object]]], at_start: Sequence[Callable[[], object]]
) -> None:
    for job in at_start:
        _run(job)
    due = [0.0] * len(jobs)
    while True:
        now = time.monotonic()
        for index, (interval, job) in enumerate(jobs):
            if now >= due[index]:
                due[index] = now + interval
                _run(job)
        time.sleep(min(interval for interval, _ in jobs) / 4)


def _run(job: Callable[[], object]) -> None:
    try:
        job()
    except Exception:
        logger.exception("periodic job %s failed", getattr(job, "__name__", job))
    finally:
        close_old_connections()
