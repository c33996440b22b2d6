"""Watches (an expert's check on a schedule, for some users), each check's outcome, what was
last told per watch and user, notifications, and each user's notification settings."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Route(models.TextChoices):
    """Whom the entry agent tells about a finding."""

    AUTO = "auto", _("By severity (critical: the user and staff; else the user)")
    USER = "user", _("The user")
    STAFF = "staff", _("Staff")
    BOTH = "both", _("The user and staff")


class Severity(models.TextChoices):
    """How serious a finding is, as the check reports it."""

    INFO = "info", _("Info")
    WARNING = "warning", _("Warning")
    CRITICAL = "critical", _("Critical")


class Watch(models.Model):
    """An expert's check on a schedule ("look for invoices overdue by more than 30 days"),
    run as each watched user, with that user's rights."""

    name = models.CharField(_("name"), max_length=200, unique=True)
    agent = models.ForeignKey(
        "agents.Agent", verbose_name=_("expert"), on_delete=models.CASCADE, related_name="+"
    )
    prompt = models.TextField(
        _("check"), help_text=_("What the expert looks for, with its tools, for each user.")
    )
    schedule = models.CharField(
        _("schedule"),
        max_length=200,
        help_text=_("In words (“weekdays at 09:00”, “每天早上9点”) or a crontab expression."),
    )
    timezone = models.CharField(
        _("timezone"), max_length=64, blank=True, help_text=_("Blank: the site's timezone.")
    )
    # The schedule's crontab fields, read from `schedule` when it is saved.
    cron = models.CharField(_("crontab"), max_length=100, editable=False)
    users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, verbose_name=_("users"), blank=True, related_name="+"
    )
    groups = models.ManyToManyField(
        "auth.Group", verbose_name=_("groups"), blank=True, related_name="+"
    )
    route = models.CharField(_("tell"), max_length=8, choices=Route.choices, default=Route.AUTO)
    staff_group = models.ForeignKey(
        "auth.Group",
        verbose_name=_("staff group"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("Staff told about findings; blank: every staff member."),
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    # The last slot checked (or the time it was enabled): a later slot is due.
    last_slot_at = models.DateTimeField(_("last slot"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("watch")
        verbose_name_plural = _("watches")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class CheckStatus(models.TextChoices):
    """A check is running until its turn ends; then what came of it."""

    RUNNING = "running", _("Running")
    TOLD = "told", _("Told")
    SUPPRESSED = "suppressed", _("Suppressed (unchanged)")
    CLEARED = "cleared", _("Cleared")
    NOTHING = "nothing", _("Nothing found")
    MUTED = "muted", _("Muted")
    ERROR = "error", _("Error")


class WatchCheck(models.Model):
    """One check of one watch for one user at one slot (unique: a duplicate firing is one)."""

    watch = models.ForeignKey(
        Watch, verbose_name=_("watch"), on_delete=models.CASCADE, related_name="checks"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    slot = models.CharField(_("slot"), max_length=16)  # wall-clock minute (reminders.slots)
    late = models.BooleanField(_("late"), default=False)
    run = models.ForeignKey(
        "delegation.Run",
        verbose_name=_("run"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    status = models.CharField(
        _("status"), max_length=10, choices=CheckStatus.choices, default=CheckStatus.RUNNING
    )
    finding = models.JSONField(_("finding"), null=True, blank=True)
    explanation = models.TextField(_("explanation"), blank=True)
    error = models.TextField(_("error"), blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("watch check")
        verbose_name_plural = _("watch checks")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["watch", "user", "slot"], name="one_check_per_slot")
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="watch_check_status")]

    def __str__(self) -> str:
        return f"{self.watch} · {self.user} · {self.slot} ({self.status})"


class WatchState(models.Model):
    """Per watch and user: muted, and the finding last told (to suppress an unchanged one)."""

    watch = models.ForeignKey(
        Watch, verbose_name=_("watch"), on_delete=models.CASCADE, related_name="states"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    muted = models.BooleanField(_("muted"), default=False)
    active_key = models.CharField(_("open finding"), max_length=200, blank=True)
    active_digest = models.CharField(_("its content"), max_length=64, blank=True)

    class Meta:
        verbose_name = _("watch state")
        verbose_name_plural = _("watch states")
        constraints = [
            models.UniqueConstraint(fields=["watch", "user"], name="one_state_per_watch_user")
        ]

    def __str__(self) -> str:
        return f"{self.watch} · {self.user}"


class NotificationStatus(models.TextChoices):
    """Held for quiet hours or the daily cap, then delivered once."""

    HELD = "held", _("Held")
    DELIVERED = "delivered", _("Delivered")


class Notification(models.Model):
    """A finding told to one person (the user it was found for, or a staff member)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("recipient"),
        on_delete=models.CASCADE,
        related_name="watch_notifications",
    )
    check_row = models.ForeignKey(
        WatchCheck, verbose_name=_("check"), on_delete=models.CASCADE, related_name="notifications"
    )
    watch = models.ForeignKey(
        Watch, verbose_name=_("watch"), on_delete=models.CASCADE, related_name="+"
    )
    staff = models.BooleanField(_("to staff"), default=False)
    title = models.CharField(_("title"), max_length=200)
    detail = models.TextField(_("detail"), blank=True)
    severity = models.CharField(_("severity"), max_length=8, choices=Severity.choices)
    status = models.CharField(
        _("status"), max_length=10, choices=NotificationStatus.choices, db_index=True
    )
    deliver_at = models.DateTimeField(_("deliver at"))
    delivered_at = models.DateTimeField(_("delivered at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["check_row", "user"], name="one_notification_each")
        ]

    def __str__(self) -> str:
        return f"{self.title} → {self.user} ({self.status})"


class NotificationSettings(models.Model):
    """A user's quiet hours (in their timezone), daily cap, and where notifications go."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="notification_settings",
    )
    quiet_start = models.TimeField(_("quiet from"), null=True, blank=True)
    quiet_end = models.TimeField(_("quiet until"), null=True, blank=True)
    daily_cap = models.PositiveSmallIntegerField(
        _("most per day"), default=10, help_text=_("More wait for the next day.")
    )
    email = models.BooleanField(_("also by email"), default=False)
    linked_chats = models.BooleanField(_("also to linked chat apps"), default=True)

    class Meta:
        verbose_name = _("notification settings")
        verbose_name_plural = _("notification settings")

    def __str__(self) -> str:
        return str(self.user)
