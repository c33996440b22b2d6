"""The reminder dispatcher: claims due rows in batches (`FOR UPDATE SKIP LOCKED`), delivers
them and marks them sent in the same transaction, so each is sent once however many
dispatchers run and whenever one dies; failures retry with backoff, then end as failed. A
beat-triggered pass also sends what falls due before the next trigger, as it falls due."""

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

from config.db import AnyOf
from reminders.delivery import DUE_FIELDS, Due, deliver_to_chat, email_send, email_targets
from reminders.metrics import dispatch_counted
from reminders.models import Reminder, ReminderStatus

logger = logging.getLogger(__name__)

MAX_BACKOFF = timedelta(hours=1)
HELD_SECONDS = 0.05  # how long a beat pass leaves due rows to the dispatcher that holds them


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


def reminder_claim_due(*, now: datetime, limit: int, since: datetime | None = None) -> list[Due]:
    """Lock and return up to `limit` pending reminders due by `now` (and not before `since`),
    oldest first, skipping rows another dispatcher holds. Call inside a transaction. (SQLite
    has no row locks: Django drops FOR UPDATE there, and its IMMEDIATE transactions serialize
    dispatchers instead.)"""
    due = Reminder.objects.filter(status=ReminderStatus.PENDING, due_at__lte=now)
    if since is not None:
        due = due.filter(due_at__gte=since)
    rows = (
        due.select_for_update(skip_locked=True, of=("self",))
        .order_by("due_at")
        .values_list(*DUE_FIELDS)[:limit]
    )
    return [Due(*row) for row in rows]


def reminders_dispatch(
    *,
    now: datetime | None = None,
    batch_size: int | None = None,
    max_seconds: float | None = None,
) -> DispatchStats:
    """Send every due reminder, batch after batch, until none is due or `max_seconds`
    (REMINDER_DISPATCH_MAX_SECONDS) is up; the next pass carries on. `now` pins the clock."""
    stats = _dispatch_pass(now, batch_size, max_seconds)
    dispatch_counted(sent=stats.sent, late=stats.late, retried=stats.retried, failed=stats.failed)
    return stats


def _dispatch_pass(
    now: datetime | None, batch_size: int | None, max_seconds: float | None
) -> DispatchStats:
    clock: Callable[[], datetime] = (lambda: now) if now is not None else timezone.now
    size = batch_size or settings.REMINDER_BATCH_SIZE
    budget = settings.REMINDER_DISPATCH_MAX_SECONDS if max_seconds is None else max_seconds
    stop_at = time.monotonic() + budget
    stats = DispatchStats()
    # A plain read first: an idle pass takes no lock (on SQLite no write lock at all).
    if not Reminder.objects.filter(status=ReminderStatus.PENDING, due_at__lte=clock()).exists():
        return stats
    since = None
    while True:
        claimed = _dispatch_batch(clock, size, since, stats)
        if len(claimed) < size or time.monotonic() >= stop_at:
            return stats
        # The next claim starts where this one ended. The rows this pass sent stay in the
        # partial index until vacuum, and a claim from the start walked them all: draining a
        # backlog of 300,000, Postgres's time a reminder grew from 45 µs to 104, on and on.
        # (A row skipped before `since` because another dispatcher held it is the next pass's.)
        since = claimed[-1].due_at


def reminders_dispatch_window() -> DispatchStats:
    """A triggered pass: send what is due, then each reminder as it falls due until the next
    trigger is expected (REMINDER_DISPATCH_SECONDS from now), so a reminder waits for a batch,
    not for a trigger. Returns as soon as nothing falls due before then."""
    window_end = time.monotonic() + settings.REMINDER_DISPATCH_SECONDS
    stats = DispatchStats()
    while True:
        wait = _seconds_to_next_due()
        if wait is None or time.monotonic() + wait >= window_end:
            return stats
        time.sleep(wait)
        sent = reminders_dispatch()
        stats.add(sent)
        if not sent.batches:  # what is due is another dispatcher's batch: let it commit
            time.sleep(HELD_SECONDS)


def _seconds_to_next_due() -> float | None:
    """How long until the next pending reminder is due (0 when one is), or None if none is."""
    next_due = (
        Reminder.objects.filter(status=ReminderStatus.PENDING)
        .order_by("due_at")
        .values_list("due_at", flat=True)
        .first()
    )
    if next_due is None:
        return None
    return max(0.0, (next_due - timezone.now()).total_seconds())


def _dispatch_batch(
    clock: Callable[[], datetime], size: int, since: datetime | None, stats: DispatchStats
) -> list[Due]:
    """One transaction: claim, deliver, mark; what it claimed. If it fails as a whole, go row
    by row so one bad reminder cannot hold back the others (and gets its own retry)."""
    claimed: list[Due] = []
    batch = DispatchStats(batches=1)
    try:
        with transaction.atomic():
            claimed = reminder_claim_due(now=clock(), limit=size, since=since)
            if claimed:
                _deliver(claimed, clock, batch)
        if claimed:
            stats.add(batch)  # counted once committed
    except Exception:
        if not claimed:
            raise  # the claim itself failed (database gone): nothing to isolate
        logger.exception("reminder batch of %d failed; retrying one by one", len(claimed))
        for reminder in claimed:
            _dispatch_one(reminder.id, clock, stats)
    return claimed


def _dispatch_one(reminder_id: int, clock: Callable[[], datetime], stats: DispatchStats) -> None:
    one = DispatchStats()
    pending = Reminder.objects.select_for_update(skip_locked=True, of=("self",)).filter(
        pk=reminder_id, status=ReminderStatus.PENDING
    )
    try:
        with transaction.atomic():
            claimed = [
                Due(*row) for row in pending.filter(due_at__lte=clock()).values_list(*DUE_FIELDS)
            ]
            if claimed:
                _deliver(claimed, clock, one)
        stats.add(one)
    except Exception as exc:
        logger.exception("reminder %s failed", reminder_id)
        with transaction.atomic():
            row = pending.values_list(*DUE_FIELDS).first()
            if row is not None:
                _mark_retry(Due(*row), f"{type(exc).__name__}: {exc}", clock(), stats)


def _deliver(claimed: list[Due], clock: Callable[[], datetime], stats: DispatchStats) -> None:
    """Email first (an email failure retries that reminder alone), then chat and events for
    the rest, then mark them sent: all in the claiming transaction."""
    failures: dict[int, str] = {}
    addresses = email_targets(claimed)
    if addresses:
        with get_connection() as mailer:
            for reminder in claimed:
                if reminder.id in addresses:
                    try:
                        email_send(reminder, addresses[reminder.id], mailer)
                    except Exception as exc:
                        failures[reminder.id] = f"email: {type(exc).__name__}: {exc}"
    now = clock()
    delivered = [r for r in claimed if r.id not in failures]
    threshold = now - timedelta(seconds=settings.REMINDER_LATE_SECONDS)
    late_ids = {r.id for r in delivered if r.remind_at < threshold}
    deliver_to_chat(delivered, now=now, late_ids=late_ids)
    pending = Reminder.objects.filter(status=ReminderStatus.PENDING)
    for late in (True, False):
        ids = [r.id for r in delivered if (r.id in late_ids) == late]
        if ids:
            pending.filter(AnyOf(F("pk"), ids)).update(
                status=ReminderStatus.SENT,
                sent_at=now,
                late=late,
                attempts=F("attempts") + 1,
                last_error="",
            )
    stats.sent += len(delivered)
    stats.late += len(late_ids)
    for reminder in claimed:
        if reminder.id in failures:
            _mark_retry(reminder, failures[reminder.id], now, stats)


def _mark_retry(reminder: Due, error: str, now: datetime, stats: DispatchStats) -> None:
    """Count the attempt; try again after a doubling backoff, or give up as failed."""
    attempts = reminder.attempts + 1
    if attempts >= settings.REMINDER_MAX_ATTEMPTS:
        fields = {"status": ReminderStatus.FAILED}
        stats.failed += 1
    else:
        backoff = timedelta(seconds=settings.REMINDER_RETRY_SECONDS * 2 ** (attempts - 1))
        fields = {"due_at": now + min(backoff, MAX_BACKOFF)}
        stats.retried += 1
    Reminder.objects.filter(pk=reminder.id, status=ReminderStatus.PENDING).update(
        attempts=attempts, last_error=error[:2000], **fields
    )
