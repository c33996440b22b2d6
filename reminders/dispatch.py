"""The reminder dispatcher: claims due rows in batches (`FOR UPDATE SKIP LOCKED`), delivers
them and marks them sent in the same transaction, so each is sent once however many
dispatchers run and whenever one dies; failures retry with backoff, then end as failed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import get_connection
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from reminders.delivery import deliver_to_chat, email_send, email_targets
from reminders.models import Reminder, ReminderStatus

logger = logging.getLogger(__name__)

MAX_BACKOFF = timedelta(hours=1)


@dataclass
class DispatchStats:
    """What one dispatcher pass did."""

    sent: int = 0
    late: int = 0
    retried: int = 0
    failed: int = 0
    batches: int = 0

    def add(self, other: DispatchStats) -> None:
        """Count another (committed) part of the pass."""
        for name in ("sent", "late", "retried", "failed", "batches"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def reminder_claim_due(*, now: datetime, limit: int) -> list[Reminder]:
    """Lock and return up to `limit` pending reminders due by `now`, oldest first, skipping rows
    another dispatcher holds. Call inside a transaction. (SQLite has no row locks: Django drops
    FOR UPDATE there, and its IMMEDIATE transactions serialize dispatchers instead.)"""
    return list(
        Reminder.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(status=ReminderStatus.PENDING, due_at__lte=now)
        .order_by("due_at")[:limit]
    )


def reminders_dispatch(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_seconds: float | None = None,
) -> DispatchStats:
    """Send every due reminder, batch after batch, until none is due or `max_seconds`
    (REMINDER_DISPATCH_MAX_SECONDS) is up; the next pass carries on. `now` pins the clock."""
    clock: Callable[[], datetime] = (lambda: now) if now is not None else timezone.now
    size = batch_size or settings.REMINDER_BATCH_SIZE
    budget = settings.REMINDER_DISPATCH_MAX_SECONDS if max_seconds is None else max_seconds
    stop_at = time.monotonic() + budget
    stats = DispatchStats()
    # A plain read first: an idle pass takes no lock (on SQLite no write lock at all).
    if not Reminder.objects.filter(status=ReminderStatus.PENDING, due_at__lte=clock()).exists():
        return stats
    while True:
        claimed = _dispatch_batch(clock, size, stats)
        if claimed < size or time.monotonic() >= stop_at:
            return stats


def _dispatch_batch(clock: Callable[[], datetime], size: int, stats: DispatchStats) -> int:
    """One transaction: claim, deliver, mark. If it fails as a whole, go row by row so one bad
    reminder cannot hold back the others (and gets its own retry)."""
    claimed: list[Reminder] = []
    batch = DispatchStats(batches=1)
    try:
        with transaction.atomic():
            claimed = reminder_claim_due(now=clock(), limit=size)
            if claimed:
                _deliver(claimed, clock, batch)
        if claimed:
            stats.add(batch)  # counted once committed
    except Exception:
        if not claimed:
            raise  # the claim itself failed (database gone): nothing to isolate
        logger.exception("reminder batch of %d failed; retrying one by one", len(claimed))
        for reminder in claimed:
            _dispatch_one(reminder.pk, clock, stats)
    return len(claimed)


def _dispatch_one(reminder_id: int, clock: Callable[[], datetime], stats: DispatchStats) -> None:
    one = DispatchStats()
    try:
        with transaction.atomic():
            claimed = list(
                Reminder.objects.select_for_update(skip_locked=True, of=("self",)).filter(
                    pk=reminder_id, status=ReminderStatus.PENDING, due_at__lte=clock()
                )
            )
            if claimed:
                _deliver(claimed, clock, one)
        stats.add(one)
    except Exception as exc:
        logger.exception("reminder %s failed", reminder_id)
        with transaction.atomic():
            row = (
                Reminder.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(pk=reminder_id, status=ReminderStatus.PENDING)
                .first()
            )
            if row is not None:
                _mark_retry(row, f"{type(exc).__name__}: {exc}", clock(), stats)


def _deliver(claimed: list[Reminder], clock: Callable[[], datetime], stats: DispatchStats) -> None:
    """Email first (an email failure retries that reminder alone), then chat and events for
    the rest, then mark them sent: all in the claiming transaction."""
    failures: dict[int, str] = {}
    addresses = email_targets(claimed)
    if addresses:
        with get_connection() as connection:
            for reminder in claimed:
                if reminder.pk in addresses:
                    try:
                        email_send(reminder, addresses[reminder.pk], connection)
                    except Exception as exc:
                        failures[reminder.pk] = f"email: {type(exc).__name__}: {exc}"
    now = clock()
    delivered = [r for r in claimed if r.pk not in failures]
    threshold = now - timedelta(seconds=settings.REMINDER_LATE_SECONDS)
    late_ids = {r.pk for r in delivered if r.remind_at < threshold}
    deliver_to_chat(delivered, now=now, late_ids=late_ids)
    pending = Reminder.objects.filter(status=ReminderStatus.PENDING)
    for late in (True, False):
        ids = [r.pk for r in delivered if (r.pk in late_ids) == late]
        if ids:
            pending.filter(pk__in=ids).update(
                status=ReminderStatus.SENT,
                sent_at=now,
                late=late,
                attempts=F("attempts") + 1,
                last_error="",
            )
    stats.sent += len(delivered)
    stats.late += len(late_ids)
    for reminder in claimed:
        if reminder.pk in failures:
            _mark_retry(reminder, failures[reminder.pk], now, stats)


def _mark_retry(reminder: Reminder, error: str, now: datetime, stats: DispatchStats) -> None:
    """Count the attempt; try again after a doubling backoff, or give up as failed."""
    attempts = reminder.attempts + 1
    if attempts >= settings.REMINDER_MAX_ATTEMPTS:
        fields = {"status": ReminderStatus.FAILED}
        stats.failed += 1
    else:
        backoff = timedelta(seconds=settings.REMINDER_RETRY_SECONDS * 2 ** (attempts - 1))
        fields = {"due_at": now + min(backoff, MAX_BACKOFF)}
        stats.retried += 1
    Reminder.objects.filter(pk=reminder.pk, status=ReminderStatus.PENDING).update(
        attempts=attempts, last_error=error[:2000], **fields
    )
