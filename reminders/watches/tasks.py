"""Celery tasks of watches: thin wrappers that call a service."""

from __future__ import annotations

from celery import shared_task

from reminders.watches.checks import check_finish, watches_tick


@shared_task(name="watches.tick", ignore_result=True)
def tick() -> dict[str, int]:
    """Beat-driven (every WATCH_TICK_SECONDS): start due checks, deliver held notifications."""
    return watches_tick()


@shared_task(name="watches.check_finish", ignore_result=True)
def finish(check_id: int) -> str:
    """A check's turn ended: read its finding and tell it (once, however often delivered)."""
    return check_finish(check_id=check_id)
