"""Admin pages in the staff member's own time zone (their chat preference), else the site's."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.urls import NoReverseMatch, reverse
from django.utils import timezone


def person_zone(user: Any) -> ZoneInfo:
    """The IANA zone the person chose in the chat page, else the site's TIME_ZONE."""
    # Read by attribute: config sits below chat, which owns the preference (ARCHITECTURE.md).
    name = getattr(getattr(user, "chat_preference", None), "timezone", "") or settings.TIME_ZONE
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo(settings.TIME_ZONE)


@cache
def _admin_prefix() -> str | None:
    try:
        return reverse("admin:index")
    except NoReverseMatch:
        return None


class AdminTimeZoneMiddleware:
    """Activates the signed-in person's zone for admin pages (after AuthenticationMiddleware),
    so every time the admin shows is in their zone; the header names it (base_site.html)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        """Run the view in the person's zone when it is an admin page."""
        prefix = _admin_prefix()
        user = getattr(request, "user", None)
        admin_page = bool(prefix) and request.path.startswith(prefix or "")
        if not admin_page or user is None or not user.is_authenticated:
            return self.get_response(request)
        timezone.activate(person_zone(user))
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
