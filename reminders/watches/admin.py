"""Admin of watches: define them (schedule in words, shown with the next run), and read every
check, notification and user's notification settings."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _

from reminders.watches.models import (
    Notification,
    NotificationSettings,
    Watch,
    WatchCheck,
    WatchState,
)
from reminders.watches.schedule import cron_of, watch_next_run, watch_words
from reminders.watches.services import watch_save


class WatchForm(forms.ModelForm):
    """Reads the schedule words at once: words no schedule fits are a field error."""

    class Meta:
        model = Watch
        fields = (
            "name",
            "agent",
            "prompt",
            "schedule",
            "timezone",
            "users",
            "groups",
            "route",
            "staff_group",
            "enabled",
        )

    def clean_schedule(self) -> str:
        """The words, if they say a schedule."""
        words = self.cleaned_data["schedule"]
        try:
            cron_of(words)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return words


class CheckInline(admin.TabularInline):
    """The latest checks of a watch."""

    model = WatchCheck
    extra = 0
    max_num = 0
    can_delete = False
    fields = ("slot", "user", "status", "late", "finding", "error", "run")
    readonly_fields = fields
    ordering = ["-created_at"]

    def get_queryset(self, request: HttpRequest) -> Any:
        """Newest first, with their users."""
        return super().get_queryset(request).select_related("user", "run")


@admin.register(Watch)
class WatchAdmin(admin.ModelAdmin):
    """Watches: an expert's check on a schedule, for users and groups."""

    form = WatchForm
    list_display = ("name", "agent", "schedule_words", "next_run", "route", "enabled")
    list_filter = ("enabled", "route", "agent")
    search_fields = ("name", "prompt")
    filter_horizontal = ("users", "groups")
    readonly_fields = ("schedule_words", "next_run", "last_slot_at")
    fields = (
        "name",
        "agent",
        "prompt",
        "schedule",
        "timezone",
        "schedule_words",
        "next_run",
        "users",
        "groups",
        "route",
        "staff_group",
        "enabled",
        "last_slot_at",
    )
    inlines = [CheckInline]

    @admin.display(description=_("schedule in words"))
    def schedule_words(self, watch: Watch) -> str:
        """The schedule as words, in the admin's language."""
        return watch_words(watch) if watch.pk else "—"

    @admin.display(description=_("next run"))
    def next_run(self, watch: Watch) -> str:
        """When it next checks, in the admin's timezone."""
        at = watch_next_run(watch, timezone.now()) if watch.pk else None
        return date_format(timezone.localtime(at), "DATETIME_FORMAT") if at else "—"

    def save_model(self, request: HttpRequest, obj: Watch, form: Any, change: bool) -> None:
        """Through the service: the crontab from the words, the first slot from now."""
        watch_save(watch=obj)


@admin.register(WatchCheck)
class WatchCheckAdmin(admin.ModelAdmin):
    """Every check and what came of it (told, suppressed, cleared, muted, error)."""

    list_display = ("watch", "user", "slot", "status", "late", "created_at")
    list_filter = ("status", "late", "watch")
    search_fields = ("watch__name", "user__username", "error")
    readonly_fields = [f.name for f in WatchCheck._meta.fields]
    list_select_related = ("watch", "user")

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Checks are made by the schedule only."""
        return False


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    """Findings told to people: held (quiet hours, cap) or delivered."""

    list_display = ("title", "user", "watch", "severity", "staff", "status", "deliver_at")
    list_filter = ("status", "severity", "staff")
    readonly_fields = [f.name for f in Notification._meta.fields]
    list_select_related = ("user", "watch")

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Notifications come from findings only."""
        return False


@admin.register(NotificationSettings)
class NotificationSettingsAdmin(admin.ModelAdmin):
    """Each user's quiet hours, daily cap and channels."""

    list_display = ("user", "quiet_start", "quiet_end", "daily_cap", "email", "linked_chats")
    list_select_related = ("user",)


@admin.register(WatchState)
class WatchStateAdmin(admin.ModelAdmin):
    """Per watch and user: muted, and the finding last told."""

    list_display = ("watch", "user", "muted", "active_key")
    list_filter = ("muted",)
    list_select_related = ("watch", "user")
