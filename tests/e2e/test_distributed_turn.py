"""A websocket turn through a real Celery worker process, Postgres and channels_redis."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from chat.models import ChatMessage
from delegation.models import Run, RunStatus
from tests.chat.helpers import connect, events_until, send_frame
from tests.waiting import tasks_logged_done, wait_until_async

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


async def test_turn_runs_on_a_celery_worker_and_streams_over_redis(
    celery_worker, user, entry_agent
):
    assert type(get_channel_layer()).__name__ == "RedisChannelLayer"
    ws = await connect(user)
    frame = send_frame("what is 19*23?")
    await ws.send_json_to(frame)
    events = await events_until(ws, timeout=30)
    types = [e["type"] for e in events]
    assert types[:3] == ["message.created", "tool.called", "tool.result"]
    assert types[-2:] == ["message.completed", "run.completed"]
    assert "19*23 = 437" in events[-2]["data"]["text"]
    run = await database_sync_to_async(Run.objects.get)(pk=events[0]["run_id"])
    assert run.status == RunStatus.SUCCEEDED
    roles = await database_sync_to_async(
        lambda: list(
            ChatMessage.objects.filter(session_id=frame["session_id"]).values_list(
                "role", flat=True
            )
        )
    )()
    assert roles == ["user", "tool", "agent"]
    await ws.disconnect()


async def test_duplicate_task_delivery_runs_the_turn_once(celery_worker, user, entry_agent):
    from delegation.tasks import advance_run

    ws = await connect(user)
    frame = send_frame("what is 2+2?")
    await ws.send_json_to(frame)
    events = await events_until(ws, timeout=30)
    run_id = events[0]["run_id"]
    # The broker redelivers the same task: a no-op on a finished run.
    again = [advance_run.delay(run_id).id for _ in range(2)]
    await wait_until_async(lambda: tasks_logged_done(again, "w1"), timeout=30, interval=0.1)
    assert await ws.receive_nothing(timeout=0.5)
    count = await database_sync_to_async(
        lambda: ChatMessage.objects.filter(run_id=run_id).count()
    )()
    assert count == 2  # one tool message, one answer
    await ws.disconnect()
