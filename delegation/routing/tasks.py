"""Celery tasks of routing: thin wrappers that call a service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from delegation.routing.stats import stats_prune


@shared_task(name="routing.prune_stats", ignore_result=True)
def prune_stats() -> int:
    """Beat-driven, daily: forget statistics older than the window (and a year at the least,
    for the admin's and the API's longest period)."""
    return stats_prune(keep_days=max(settings.ROUTING_STATS_WINDOW_DAYS, 366))
