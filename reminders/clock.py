"""The one source of "now" for the planner tools, and the user's local view of it.

Services take `now` as an argument; tools read it here, so a test pins time by replacing
`reminders.clock.now`, never by patching datetime globally."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.utils import timezone

from agents.tools.builtin import user_timezone


def now() -> datetime:
    """The current instant (aware, UTC)."""
    return timezone.now()


def local_now(user: Any, at: datetime) -> tuple[datetime, ZoneInfo]:
    """`at` in the user's own timezone, and that timezone."""
    zone = user_timezone(user)
    return at.astimezone(zone), zone
