"""What a dead worker left of the channels: events not processed, answers not delivered.

An event is processed and an answer delivered by a task queued after commit; a worker killed
mid-task, or a process that died between the commit and the queueing, leaves the row as it was.
The sweep queues such rows again once they are older than CHANNEL_STALE_SECONDS. Both tasks
start nothing twice and send nothing twice (docs/channels.md), so a row queued twice is safe.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from chat.channels.models import Delivery, DeliveryStatus, InboundEvent, InboundStatus
from config.enqueue import enqueue
from delegation.models import FINAL_STATUSES, Run


def channels_sweep() -> dict[str, int]:
    """Queue again the events left unprocessed and the answers of ended turns left unsent."""
    stale = timezone.now() - timedelta(seconds=settings.CHANNEL_STALE_SECONDS)
    events = list(
        InboundEvent.objects.filter(
            status=InboundStatus.RECEIVED, received_at__lt=stale
        ).values_list("pk", flat=True)[:500]
    )
    for event_id in events:
        enqueue("chat_channels.inbound_process", event_id)
    ended = Run.objects.filter(status__in=FINAL_STATUSES, finished_at__lt=stale).values("pk")
    deliveries = list(
        Delivery.objects.filter(status=DeliveryStatus.PENDING, run_id__in=ended)
        .filter(Q(attempted_at=None) | Q(attempted_at__lt=stale))
        .values_list("run_id", flat=True)[:500]
    )
    for run_id in deliveries:
        enqueue("chat_channels.delivery_send", str(run_id))
    return {"events": len(events), "deliveries": len(deliveries)}
