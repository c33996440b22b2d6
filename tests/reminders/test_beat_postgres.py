"""The distributed stack end to end: Celery beat triggers the dispatcher on a real worker, and
the reminder reaches the user's socket over channels_redis and lands in chat history."""

from __future__ import annotations

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from chat.models import ChatMessage
from reminders.delivery import reminder_message_id
from reminders.models import Reminder, ReminderStatus
from tests.chat.helpers import connect
from tests.e2e.conftest import flush_redis, workers  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


async def test_beat_on_a_worker_sends_a_due_reminder_once(workers, user):  # noqa: F811
    workers.start("beat", beat=True, REMINDER_DISPATCH_SECONDS="1")
    socket = await connect(user)
    at = timezone.now() + timedelta(seconds=2)
    reminder = await database_sync_to_async(Reminder.objects.create)(
        user=user, remind_at=at, due_at=at, content="Stretch your legs."
    )
    event = await socket.receive_json_from(timeout=30)
    assert event["type"] == "reminder.due" and event["data"]["reminder_id"] == reminder.pk
    await reminder.arefresh_from_db()
    assert reminder.status == ReminderStatus.SENT and reminder.attempts == 1
    assert (reminder.sent_at - reminder.remind_at) < timedelta(seconds=5)
    assert await ChatMessage.objects.filter(pk=reminder_message_id(reminder.pk)).aexists()
    assert await socket.receive_nothing(timeout=2.5)  # later beat ticks send nothing more
    await socket.disconnect()
