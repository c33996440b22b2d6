"""Admin for runs: status, agent, depth, duration and tokens, filterable."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from delegation.models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are records of work done: browsable, never edited by hand."""

    list_display = [
        "id",
        "agent",
        "user",
        "status",
        "depth",
        "steps",
        "tokens",
        "duration",
        "created_at",
    ]
    list_filter = ["status", "agent", "depth"]
    search_fields = ["id", "task", "user__username", "agent__name"]
    raw_id_fields = ["session", "user", "parent", "user_message"]
    readonly_fields = [f.name for f in Run._meta.fields]

    @admin.display(description="tokens")
    def tokens(self, obj: Run) -> int:
        """Total tokens of this run."""
        return int((obj.usage or {}).get("total_tokens", 0))

    @admin.display(description="duration")
    def duration(self, obj: Run) -> str:
        """Wall time from start to finish."""
        if obj.started_at and obj.finished_at:
            return f"{(obj.finished_at - obj.started_at).total_seconds():.2f} s"
        return "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Runs start from chat, not from admin."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Read-only."""
        return False
