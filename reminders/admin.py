"""Admin for tasks, reminders (filters; actions: send now, cancel) and scheduled agent runs."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy, ngettext

from agents.tools.builtin import user_timezone
from config.enqueue import enqueue
from reminders.dates import describe_window
from reminders.models import Reminder, ScheduledPrompt, Task, TaskStatus
from reminders.schedule_selectors import schedule_next_run
from reminders.schedule_words import CronSpec, describe_schedule, parse_schedule
from reminders.services.reminders import (
    reminder_admin_save,
    reminders_cancel,
    reminders_send_now,
)
from reminders.services.schedules import (
    crontab_spec,
    scheduled_prompt_delete,
    scheduled_prompt_save,
)
from reminders.services.todos import task_finish, task_remove


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    """Users' tasks: filter by status, priority, day and user; finish them in bulk."""

    list_display = ["title", "user", "due_date", "when", "priority", "status", "created_at"]
    list_filter = ["status", "priority", "due_date", ("user", admin.RelatedOnlyFieldListFilter)]
    date_hierarchy = "due_date"
    search_fields = ["title", "notes", "user__username"]
    raw_id_fields = ["user"]
    readonly_fields = ["completed_at", "created_at", "updated_at"]
    actions = ["mark_done"]

    @admin.display(description=gettext_lazy("time"))
    def when(self, obj: Task) -> str:
        """Exact times, the part of the day, or any time."""
        return describe_window(start=obj.start_time, end=obj.end_time, segment=obj.segment)

    @admin.action(
        description=gettext_lazy("Mark selected tasks done (cancels their pending reminders)")
    )
    def mark_done(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        """Finish pending tasks."""
        now = timezone.now()
        done = 0
        for task in queryset.filter(status=TaskStatus.PENDING):
            task_finish(task=task, now=now)
            done += 1
        self.message_user(
            request,
            ngettext(
                "%(count)d task marked done.",
                "%(count)d tasks marked done.",
                done,
            )
            % {"count": done},
            messages.SUCCESS,
        )

    def delete_model(self, request: HttpRequest, obj: Task) -> None:
        """Deleting a task cancels its pending reminders first."""
        task_remove(task=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Task]) -> None:
        """Bulk delete, each task's pending reminders cancelled first."""
        for task in queryset:
            task_remove(task=task)


@admin.register(Reminder)
class ReminderAdmin(admin.ModelAdmin):
    """Reminders with their delivery state; send now or cancel in bulk."""

    list_display = [
        "id",
        "user",
        "short_content",
        "remind_at",
        "status",
        "channel",
        "attempts",
        "late",
        "sent_at",
    ]
    list_filter = [
        "status",
        "channel",
        "late",
        "remind_at",
        ("user", admin.RelatedOnlyFieldListFilter),
    ]
    date_hierarchy = "remind_at"
    search_fields = ["content", "user__username", "last_error"]
    raw_id_fields = ["user", "task"]
    readonly_fields = ["status", "attempts", "last_error", "sent_at", "late", "created_at"]
    actions = ["send_now", "cancel"]

    @admin.display(description=gettext_lazy("content"))
    def short_content(self, obj: Reminder) -> str:
        """The first line of the reminder."""
        line = obj.content.split("\n", 1)[0]
        return line[:80] + ("…" if len(line) > 80 else "")

    def save_model(self, request: HttpRequest, obj: Reminder, form: Any, change: bool) -> None:
        """A pending reminder is due at its remind time."""
        reminder_admin_save(reminder=obj)

    @admin.action(description=gettext_lazy("Send selected reminders now (pending or failed)"))
    def send_now(self, request: HttpRequest, queryset: QuerySet[Reminder]) -> None:
        """Make them due now and start a dispatcher pass."""
        from reminders.tasks import dispatch_reminders

        queued = reminders_send_now(
            reminder_ids=list(queryset.values_list("pk", flat=True)), now=timezone.now()
        )
        if queued:
            enqueue(dispatch_reminders)
        self.message_user(
            request,
            ngettext(
                "%(count)d reminder queued to send now.",
                "%(count)d reminders queued to send now.",
                queued,
            )
            % {"count": queued},
            messages.SUCCESS,
        )

    @admin.action(description=gettext_lazy("Cancel selected reminders (pending ones)"))
    def cancel(self, request: HttpRequest, queryset: QuerySet[Reminder]) -> None:
        """Cancel pending reminders; sent ones are left as they are."""
        cancelled = reminders_cancel(reminder_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(
            request,
            ngettext(
                "%(count)d reminder cancelled.",
                "%(count)d reminders cancelled.",
                cancelled,
            )
            % {"count": cancelled},
            messages.SUCCESS,
        )


class ScheduledPromptForm(forms.ModelForm):
    """A scheduled prompt with its schedule in words ("每週一 09:00", "every Monday at 9",
    "weekdays 08:30" or a crontab expression), read into a crontab on save."""

    schedule = forms.CharField(
        label=gettext_lazy("When"),
        max_length=200,
        help_text=gettext_lazy(
            "In words, in the user's time zone: “every Monday at 9”, “weekdays 08:30”, "
            "“每週一 09:00”, “每月1日 10:00”, or a crontab expression such as “0 9 * * 1”."
        ),
    )

    class Meta:
        model = ScheduledPrompt
        fields = ["name", "user", "agent", "prompt", "schedule", "enabled", "by_email", "session"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.crontab_id and not self.is_bound:
            self.initial["schedule"] = describe_schedule(crontab_spec(self.instance.crontab))

    def clean_schedule(self) -> CronSpec:
        """The crontab fields the words say, or a form error saying what to write."""
        try:
            return parse_schedule(self.cleaned_data["schedule"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="schedule") from exc


@admin.register(ScheduledPrompt)
class ScheduledPromptAdmin(admin.ModelAdmin):
    """ "Run agent X with prompt Y for user Z" on a schedule in words (kept as a
    django-celery-beat crontab and beat entry)."""

    form = ScheduledPromptForm
    list_display = [
        *["name", "user", "agent", "when", "next_run", "enabled"],
        *["last_run_at", "last_run_late", "last_error"],
    ]
    list_filter = ["enabled", "last_run_late", "agent"]
    list_select_related = ["user", "agent", "crontab"]
    search_fields = ["name", "prompt", "user__username"]
    autocomplete_fields = ["user", "agent"]
    raw_id_fields = ["session"]
    readonly_fields = [
        *["next_run", "periodic_task", "last_run_at", "last_slot_at", "last_run_late"],
        *["last_error", "created_at"],
    ]
    actions = ["run_now"]

    @admin.display(description=gettext_lazy("When"))
    def when(self, obj: ScheduledPrompt) -> str:
        """The schedule in words, with its time zone."""
        return describe_schedule(crontab_spec(obj.crontab), obj.crontab.timezone)

    @admin.display(description=gettext_lazy("Next run"))
    def next_run(self, obj: ScheduledPrompt) -> str:
        """When it runs next, in its time zone ("—" while paused)."""
        if obj.pk is None or not obj.crontab_id:
            return "—"
        upcoming = schedule_next_run(obj, timezone.now())
        return f"{upcoming:%Y-%m-%d %H:%M %Z}" if upcoming else "—"

    def save_model(
        self, request: HttpRequest, obj: ScheduledPrompt, form: Any, change: bool
    ) -> None:
        """Save with the crontab the words say (in the user's time zone) and its beat entry."""
        scheduled_prompt_save(
            scheduled=obj,
            when=form.cleaned_data["schedule"],
            zone=str(user_timezone(obj.user)),
        )

    def delete_model(self, request: HttpRequest, obj: ScheduledPrompt) -> None:
        """Delete it with its beat entry."""
        scheduled_prompt_delete(scheduled=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ScheduledPrompt]) -> None:
        """Bulk delete, beat entries included."""
        for scheduled in queryset:
            scheduled_prompt_delete(scheduled=scheduled)

    @admin.action(description=gettext_lazy("Run selected schedules now"))
    def run_now(self, request: HttpRequest, queryset: QuerySet[ScheduledPrompt]) -> None:
        """Start each one's turn now, as its crontab would."""
        from reminders.tasks import run_scheduled_prompt_now

        for pk in queryset.values_list("pk", flat=True):
            enqueue(run_scheduled_prompt_now, pk)
        started = queryset.count()
        self.message_user(
            request,
            ngettext("%(count)d run started.", "%(count)d runs started.", started)
            % {"count": started},
            messages.SUCCESS,
        )
