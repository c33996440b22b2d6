"""The humans app's metrics, read at each scrape: questions and approvals waiting for a person,
by kind and by who decides, and how long the oldest has waited."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone

from config.metrics import Reading, readings_source
from delegation.humans.models import InboxItem, ItemStatus


def _waiting() -> Iterator[Reading]:
    pending = InboxItem.objects.filter(status=ItemStatus.PENDING)
    rows = pending.values_list("kind", "audience").annotate(n=Count("id")).order_by("kind")
    yield (
        "people_asked_waiting",
        "Inbox items (questions, approvals) waiting for a person, by kind and audience.",
        ["kind", "audience"],
        [([kind, audience], float(n)) for kind, audience, n in rows],
    )
    oldest = pending.aggregate(oldest=Min("created_at"))["oldest"]
    age = (timezone.now() - oldest).total_seconds() if oldest else 0.0
    yield (
        "people_asked_oldest_seconds",
        "How long the oldest waiting inbox item has waited (0: none waits).",
        [],
        [([], max(age, 0.0))],
    )


readings_source(_waiting)
