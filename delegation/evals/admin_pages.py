"""What the evals admin pages share: the page context and the refresh interval."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

REFRESH_SECONDS = 2  # a page of work in progress reloads itself this often (a meta refresh)


def page_context(
    admin_obj: admin.ModelAdmin, request: HttpRequest, title: str, **extra: Any
) -> Any:
    """The admin's context for a custom page of `admin_obj`, with `extra`."""
    return {
        **admin_obj.admin_site.each_context(request),
        "opts": admin_obj.model._meta,
        "title": title,
        **extra,
    }
