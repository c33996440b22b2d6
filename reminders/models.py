"""Tasks (a user's to-dos on the calendar), reminders to dispatch, and scheduled agent prompts."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Segment(models.TextChoices):
    """A part of the day, for tasks without an exact time (windows in reminders.dates)."""

    MORNING = "morning", _("Morning")
    AFTERNOON = "afternoon", _("Afternoon")
    EVENING = "evening", _("Evening")


class Priority(models.TextChoices):
    """How important a task is."""

    LOW = "low", _("Low")
    NORMAL = "normal", _("Normal")
    HIGH = "high", _("High")


class TaskStatus(models.TextChoices):
    """Pending tasks are the live ones; finished tasks stay as a record."""

    PENDING = "pending", _("Pending")
    DONE = "done", _("Done")


class Task(models.Model):
    """A to-do on a day in the user's own timezone, with exact times, a day segment, or neither.

    Times are wall-clock times of the user's timezone ("14:00 on Saturday" stays 14:00 if the
    user moves); a reminder fixes its instant when it is scheduled.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="planner_tasks",
    )
    title = models.CharField(verbose_name=_("title"), max_length=200)
    due_date = models.DateField(verbose_name=_("due date"))
    start_time = models.TimeField(verbose_name=_("start time"), null=True, blank=True)
    end_time = models.TimeField(verbose_name=_("end time"), null=True, blank=True)
    segment = models.CharField(
        verbose_name=_("segment"), max_length=10, choices=Segment.choices, blank=True
    )
    priority = models.CharField(
        verbose_name=_("priority"), max_length=8, choices=Priority.choices, default=Priority.NORMAL
    )
    notes = models.TextField(verbose_name=_("notes"), blank=True)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=8,
        choices=TaskStatus.choices,
        default=TaskStatus.PENDING,
        db_index=True,
    )
    completed_at = models.DateTimeField(verbose_name=_("completed at"), null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("task")
        verbose_name_plural = _("tasks")
        ordering = ["due_date", "start_time", "id"]
        indexes = [models.Index(fields=["user", "status", "due_date"], name="task_user_day")]

    def __str__(self) -> str:
        return f"{self.title} ({self.due_date})"


class ReminderStatus(models.TextChoices):
    """Pending until the dispatcher sends it (or gives up: failed), or the user cancels it."""

    PENDING = "pending", _("Pending")
    SENT = "sent", _("Sent")
    CANCELLED = "cancelled", _("Cancelled")
    FAILED = "failed", _("Failed")


class Channel(models.TextChoices):
    """Where a reminder goes: chat is the open sockets plus chat history; email adds a mail."""

    CHAT = "chat", _("Chat")
    EMAIL = "email", _("Email")


class Reminder(models.Model):
    """One reminder for one user at one instant; the dispatcher sends each exactly once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="reminders",
    )
    task = models.ForeignKey(
        Task,
        verbose_name=_("task"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reminders",
    )
    remind_at = models.DateTimeField(
        verbose_name=_("remind at"), help_text=_("When the user wants it (aware).")
    )
    # When the dispatcher should next try: remind_at, later pushed back by retry backoff.
    due_at = models.DateTimeField(verbose_name=_("due at"), editable=False)
    content = models.TextField(verbose_name=_("content"))
    # The language `content` was written in (the user's, when scheduled): what delivery adds to
    # it (a late notice) is written in the same one. Blank on rows saved before: English.
    language = models.CharField(verbose_name=_("language"), max_length=16, blank=True, default="")
    channel = models.CharField(
        verbose_name=_("channel"), max_length=8, choices=Channel.choices, default=Channel.CHAT
    )
    status = models.CharField(
        verbose_name=_("status"),
        max_length=10,
        choices=ReminderStatus.choices,
        default=ReminderStatus.PENDING,
    )
    attempts = models.PositiveSmallIntegerField(verbose_name=_("attempts"), default=0)
    last_error = models.TextField(verbose_name=_("last error"), blank=True)
    sent_at = models.DateTimeField(verbose_name=_("sent at"), null=True, blank=True)
    late = models.BooleanField(
        verbose_name=_("late"),
        default=False,
        help_text=_("Sent more than REMINDER_LATE_SECONDS late."),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("reminder")
        verbose_name_plural = _("reminders")
        ordering = ["remind_at", "id"]
        indexes = [
            # The dispatcher's claim reads only pending rows in due order: a partial index keeps
            # it one short index range scan however many sent rows pile up.
            models.Index(
                fields=["due_at"],
                name="reminder_pending_due",
                condition=models.Q(status="pending"),
            ),
            models.Index(fields=["user", "status", "remind_at"], name="reminder_user_status"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.content[:40]} @ {self.remind_at:%Y-%m-%d %H:%M} ({self.get_status_display()})"
        )


class ScheduledPrompt(models.Model):
    """ "Run agent X with prompt Y for user Z" on a crontab; django-celery-beat fires it and the
    answer lands in a chat session of that user (reminders.schedules keeps the beat entry)."""

    name = models.CharField(verbose_name=_("name"), max_length=200, unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="scheduled_prompts",
    )
    agent = models.ForeignKey(
        "agents.Agent", verbose_name=_("agent"), on_delete=models.CASCADE, related_name="+"
    )
    prompt = models.TextField(verbose_name=_("prompt"))
    crontab = models.ForeignKey(
        "django_celery_beat.CrontabSchedule",
        verbose_name=_("crontab"),
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("When to run, in the crontab's own timezone."),
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    session = models.ForeignKey(
        "chat.ChatSession",
        verbose_name=_("session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("Where answers go; created on the first run when blank."),
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        verbose_name=_("periodic task"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    last_run_at = models.DateTimeField(
        verbose_name=_("last run at"), null=True, blank=True, editable=False
    )
    last_error = models.TextField(verbose_name=_("last error"), blank=True, editable=False)
    by_email = models.BooleanField(
        verbose_name=_("by email"),
        default=False,
        help_text=_("Also mail each answer to the user (when REMINDER_EMAIL_FROM is set)."),
    )
    # The language the user asked in: what a run adds to the prompt (a late notice) is in it.
    language = models.CharField(verbose_name=_("language"), max_length=16, blank=True, default="")
    last_slot_at = models.DateTimeField(
        verbose_name=_("last slot"),
        null=True,
        blank=True,
        editable=False,
        help_text=_("The due time of the latest run: each due time runs once."),
    )
    last_run_late = models.BooleanField(
        verbose_name=_("last run late"),
        default=False,
        editable=False,
        help_text=_("The latest run started more than REMINDER_LATE_SECONDS after its due time."),
    )
    # What asked for it (the chat message and the schedule asked for): the same request
    # delivered or called twice finds this row instead of creating a second one.
    request_key = models.CharField(
        verbose_name=_("request key"),
        max_length=80,
        null=True,
        blank=True,
        unique=True,
        editable=False,
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("scheduled prompt")
        verbose_name_plural = _("scheduled prompts")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
