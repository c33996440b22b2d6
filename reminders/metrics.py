"""Reminders' metrics: what each dispatcher pass sent (on time or late), retried and failed,
and the pending reminders read at each scrape (how many are due and how late the oldest is)."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Min, Q
from django.utils import timezone

from config.metrics import Reading, counter, readings_source
from reminders.models import Reminder, ReminderStatus

DISPATCHED = counter(
    "reminders_dispatched_total",
    "Reminders a dispatcher pass handled, by outcome (sent: on time or late; retried; failed).",
    ["outcome"],
)


def dispatch_counted(*, sent: int, late: int, retried: int, failed: int) -> None:
    """Count one committed dispatcher pass (`late` are among `sent`)."""
    for outcome, value in (
        ("sent_on_time", sent - late),
        ("sent_late", late),
        ("retried", retried),
        ("failed", failed),
    ):
        if value:
            DISPATCHED.labels(outcome=outcome).inc(value)


def _reminders_state() -> Iterator[Reading]:
    """Pending reminders, how many of them are due now, and the oldest due one's lateness."""
    now = timezone.now()
    pending = Reminder.objects.filter(status=ReminderStatus.PENDING).aggregate(
        pending=Count("id"),
        due=Count("id", filter=Q(due_at__lte=now)),
        oldest=Min("due_at", filter=Q(due_at__lte=now)),
    )
    yield ("reminders_pending", "Reminders not sent yet.", [], [([], float(pending["pending"]))])
    yield (
        "reminders_due",
        "Pending reminders whose time has come.",
        [],
        [([], float(pending["due"]))],
    )
    late = (now - pending["oldest"]).total_seconds() if pending["oldest"] else 0.0
    yield (
        "reminders_oldest_due_seconds",
        "How late the oldest due reminder is (0: none waits).",
        [],
        [([], max(late, 0.0))],
    )


readings_source(_reminders_state)
