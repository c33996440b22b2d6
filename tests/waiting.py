"""Waiting for a condition in tests instead of sleeping a fixed time against a deadline."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], timeout: float = 10, interval: float = 0.05, what: str = ""
) -> T:
    """Call `predicate` until it returns something truthy and return that; AssertionError
    naming what was awaited (`what`, else the predicate's source) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(predicate, what, timeout, value))
        time.sleep(interval)
    return value


async def wait_until_async(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = 10,
    interval: float = 0.05,
    what: str = "",
) -> T:
    """`wait_until` in an async test: the event loop runs on while it waits, and what
    `predicate` returns is awaited if it can be (wrap ORM reads in `database_sync_to_async`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := await _awaited(predicate())):
        if loop.time() >= deadline:
            raise AssertionError(_timed_out(predicate, what, timeout, value))
        await asyncio.sleep(interval)
    return value


async def in_process_tasks_done(timeout: float = 30) -> None:
    """Wait until the in-process pool's tasks are done, and the tasks they queued (a stalled
    model call returns, a stopped worker notices): what a fixed sleep used to hope for."""
    from config.enqueue import wait_for_in_process_tasks

    try:
        await asyncio.wait_for(asyncio.to_thread(wait_for_in_process_tasks), timeout)
    except TimeoutError:
        raise AssertionError(f"in-process tasks still running after {timeout} s") from None


def tasks_logged_done(task_ids: list[str], *workers: str) -> bool:
    """True once each task id is logged as succeeded by one of the named Celery workers (as
    tests/e2e/conftest.py starts them: their results are not stored, their logs say)."""
    from tests.server_logs import output_path

    logs = [output_path(f"celery-{name}.log") for name in workers]
    text = "".join(log.read_text(errors="replace") for log in logs if log.exists())
    return all(f"[{task_id}] succeeded" in text for task_id in task_ids)


async def _awaited(value: T | Awaitable[T]) -> T:
    return await value if inspect.isawaitable(value) else value


def _timed_out(predicate: Callable[..., object], what: str, timeout: float, value: object) -> str:
    if not what:
        try:
            what = inspect.getsource(predicate).strip()
        except (OSError, TypeError):
            what = getattr(predicate, "__qualname__", repr(predicate))
    return f"timed out after {timeout} s waiting for {what} (last: {value!r})"
