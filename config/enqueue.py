"""The one seam that runs background work: Celery when a broker is set, else an in-process pool."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from celery import Task
from django.conf import settings
from django.db import close_old_connections, transaction
from kombu.exceptions import OperationalError

from config.celery_app import app

logger = logging.getLogger(__name__)

_pool: ThreadPoolExecutor | None = None
_keeping = threading.local()  # the Kept slot of the task body running on this thread, if any


@dataclass
class Kept:
    """Work of one task name that this thread committed and keeps to run itself next
    (`taken`: promised to work enqueued in a transaction not yet committed)."""

    task_name: str
    args: tuple[Any, ...] | None = None
    taken: bool = False

    def send(self) -> None:
        """Give the kept work back to the queue after all (the keeper cannot run it)."""
        if self.args is not None:
            args, self.args = self.args, None
            _publish(task_by_name(self.task_name), args)


def enqueue(task: Task | str, *args: Any) -> bool:
    """Run `task(*args)` in the background once the current transaction commits; True when
    this thread's task body will run it itself, next (`keeping_next`), so the caller may hand
    the work over ready to run.

    `task` is a Celery task or the name it is registered under, so a lower layer can start a
    higher layer's task without importing it.
    """
    if isinstance(task, str):
        task = task_by_name(task)
    if settings.TASKS_RUN_SYNC:
        transaction.on_commit(lambda: task.apply(args=args))
        return False
    slot = getattr(_keeping, "slot", None)
    if slot is not None and not slot.taken and slot.task_name == task.name:
        slot.taken = True
        transaction.on_commit(lambda: _keep(slot, args))
        return True
    transaction.on_commit(lambda: _publish(task, args))
    return False


@contextmanager
def keeping_next(task_name: str) -> Iterator[Kept]:
    """Within the block, the first `task_name` work this thread enqueues is not sent once
    committed but kept, for the task body running here to do next (a delegation's expert, or
    the caller its end resumed) without a queue round trip. Further work is sent as usual
    (also when that first work's transaction rolled back: nothing is kept then).

    Kept work is committed but not published: if this process dies before running it, it is
    recovered as its row says (a queued run is re-sent by the sweeper as any lost task; a run
    handed over already claimed, by its expired lease). Synchronous task mode (tests) runs
    work where it is enqueued and keeps nothing.
    """
    kept = Kept(task_name)
    outer = getattr(_keeping, "slot", None)
    _keeping.slot = kept
    try:
        yield kept
    finally:
        _keeping.slot = outer


def _keep(slot: Kept, args: tuple[Any, ...]) -> None:
    """Committed work this thread's task body runs next."""
    slot.args = args


def _publish(task: Task, args: tuple[Any, ...]) -> None:
    """Hand committed work to a worker: the broker's, or this process's pool."""
    if settings.CELERY_BROKER_URL:
        _send(task, args)
    else:
        _in_process_pool().submit(_run_in_thread, task, args)


def task_by_name(name: str) -> Task:
    """The Celery task registered as `name` (the apps' tasks modules are imported on first use)."""
    if name not in app.tasks:
        # Import every installed app's tasks.py now (a worker does this at start; a web process
        # never does). Not loader.import_default_modules(): its Django fix-up re-runs setup().
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


def _in_process_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(
            max_workers=settings.INPROCESS_WORKERS, thread_name_prefix="inprocess-task"
        )
    return _pool


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
    benchmarks; replaces the pool)."""
    global _pool
    while _pool is not None:
        pool, _pool = _pool, None
        pool.shutdown(wait=True, cancel_futures=False)
