"""A time zone for tests whose words name a day of the week ("Saturday morning", 周末早上)."""

from __future__ import annotations

from datetime import UTC, datetime


def before_saturday_noon(now: datetime | None = None) -> str:
    """A time zone in which it is not yet past noon on Saturday: UTC, except from Saturday
    11:00 UTC on, when it is UTC-12 (Friday 23:00 to Saturday noon there). The demo's errands
    are asked for then, not after, when the planner rightly says that morning has passed (a CI
    run on a Saturday afternoon failed on it)."""
    now = now or datetime.now(UTC)
    return "Etc/GMT+12" if now.weekday() == 5 and now.hour >= 11 else "UTC"
