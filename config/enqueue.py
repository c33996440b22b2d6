"""The one seam that runs background work: Celery when a broker is set, else an in-process pool."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction

logger = logging.getLogger(__name__)

_pool: ThreadPoolExecutor | None = None


def enqueue(task: Any, *args: Any) -> None:
    """Run `task(*args)` in the background once the current transaction commits."""
    if settings.TASKS_RUN_SYNC:
        transaction.on_commit(lambda: task.apply(args=args))
    elif settings.CELERY_BROKER_URL:
        task.delay_on_commit(*args)
    else:
        transaction.on_commit(lambda: _in_process_pool().submit(_run_in_thread, task, args))


def _in_process_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(
            max_workers=settings.INPROCESS_WORKERS, thread_name_prefix="inprocess-task"
        )
    return _pool


def _run_in_thread(task: Any, args: tuple[Any, ...]) -> None:
    """Run one task body the way a worker would: fresh DB connections, errors logged not lost."""
    close_old_connections()
    try:
        task.run(*args)
    except Exception:  # a worker logs and survives; the task body records its own failures
        logger.exception("in-process task %s%r failed", getattr(task, "name", task), args)
    finally:
        close_old_connections()


def wait_for_in_process_tasks(timeout: float = 30.0) -> None:
    """Block until queued in-process tasks are done (tests and benchmarks; replaces the pool)."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=False)
