"""The one seam that runs background work: Celery when a broker is set, else an in-process pool."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import Task
from django.conf import settings
from django.db import close_old_connections, transaction
from kombu.exceptions import OperationalError

from config.celery_app import app

logger = logging.getLogger(__name__)

# One pool per Celery queue (CELERY_TASK_ROUTES), as a broker has one worker per queue: work on
# one queue (indexing documents) never waits behind another's (chat turns).
_pools: dict[str, ThreadPoolExecutor] = {}
_pool_lock = threading.Lock()
_discovery_lock = threading.Lock()


def enqueue(task: Task | str, *args: Any) -> None:
    """Run `task(*args)` in the background once the current transaction commits.

    `task` is a Celery task or the name it is registered under, so a lower layer can start a
    higher layer's task without importing it.
    """
    if isinstance(task, str):
        task = task_by_name(task)
    if settings.TASKS_RUN_SYNC:
        transaction.on_commit(lambda: task.apply(args=args))
        return
    transaction.on_commit(lambda: _publish(task, args))


def _publish(task: Task, args: tuple[Any, ...]) -> None:
    """Hand committed work to a worker: the broker's, or this process's pool."""
    if settings.CELERY_BROKER_URL:
        _send(task, args)
    else:
        _submit(task, args)


def task_by_name(name: str) -> Task:
    """The Celery task registered as `name` (the apps' tasks modules are imported on first use)."""
    if name not in app.tasks:
        # Import every installed app's tasks.py now (a worker does this at start; a web process
        # never does). Not loader.import_default_modules(): its Django fix-up re-runs setup().
        # Once, under a lock: threads discovering at the same time found nothing (29 of 30
        # concurrent first sends failed with LookupError).
        with _discovery_lock:
            if name not in app.tasks:
                app.autodiscover_tasks(force=True)
    try:
        return app.tasks[name]
    except KeyError:
        raise LookupError(f"no Celery task is registered as {name!r}") from None


def _send(task: Task, args: tuple[Any, ...]) -> None:
    """Publish to the broker; an outage is logged, not raised into the caller's turn.

    The row the task works on stays queued, and the sweeper re-sends runs queued longer than
    QUEUED_STALE_SECONDS once the broker is back.
    """
    try:
        task.apply_async(args=args)
    except OperationalError as exc:
        logger.warning("broker unavailable, %s%r left for the sweeper: %s", task.name, args, exc)


def _submit(task: Task, args: tuple[Any, ...]) -> None:
    """Run a task body on this process's pool for its queue (made on first use). Under the
    pools' lock, so that work a task body sends while `wait_for_in_process_tasks` replaces the
    pools lands on an old pool before its shutdown or on a new one, never on a pool shut down."""
    queue = settings.CELERY_TASK_ROUTES.get(task.name, {}).get("queue", "")
    with _pool_lock:
        if queue not in _pools:
            _pools[queue] = ThreadPoolExecutor(
                max_workers=settings.INPROCESS_QUEUE_WORKERS.get(queue, settings.INPROCESS_WORKERS),
                thread_name_prefix=f"inprocess-{queue}" if queue else "inprocess-task",
            )
        _pools[queue].submit(_run_in_thread, task, args)


def _run_in_thread(task: Task, args: tuple[Any, ...]) -> None:
    """Run one task body the way a worker would: fresh DB connections, errors logged not lost."""
    close_old_connections()
    try:
        task.run(*args)
    except Exception:  # a worker logs and survives; the task body records its own failures
        logger.exception("in-process task %s%r failed", getattr(task, "name", task), args)
    finally:
        close_old_connections()


def wait_for_in_process_tasks() -> None:
    """Block until queued in-process tasks are done, and the tasks they queued (tests and
    benchmarks; replaces the pools)."""
    global _pools
    while True:
        with _pool_lock:
            pools, _pools = list(_pools.values()), {}
        if not pools:
            return
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=False)
