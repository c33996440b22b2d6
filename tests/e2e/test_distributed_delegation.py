"""Delegation across real worker processes: a crashed worker, and racing workers."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from chat.models import ChatMessage, MessageStatus
from delegation.models import Run, RunStatus
from delegation.tasks import advance_run
from delegation.turns import turn_start
from tests.chat.helpers import connect, send_frame
from tests.delegation.conftest import make_team
from tests.fake_openai import Reply, Team, delegate, text
from tests.waiting import tasks_logged_done, wait_until_async

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def team(fake_openai) -> Team:
    return Team(fake_openai)


def worker_env(fake_openai) -> dict[str, str]:
    """Workers talk to this test's fake model; short leases and sweeps so recovery is quick."""
    return {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MAX_RETRIES": "0",
        "OPENAI_TIMEOUT": "40",
        "RUN_LEASE_SECONDS": "2",
        "SWEEP_INTERVAL_SECONDS": "1",
    }


async def wait_for(predicate, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await sync_to_async(predicate)():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.1)


async def test_worker_killed_mid_child_run_the_turn_completes_after_a_restart(
    workers, user, team, fake_openai
):
    await database_sync_to_async(make_team)(boss=["slow"], slow=[])
    team.script("boss", delegate("slow", "count the beans"), text("boss: ", "done"))
    team.script("slow", Reply(text_chunks=["lost"], stall_seconds=30), text("slow ", "recovered"))
    env = worker_env(fake_openai)
    first = await sync_to_async(workers.start)("w1", beat=True, **env)
    ws = await connect(user)
    frame = send_frame("go")
    await ws.send_json_to(frame)
    await wait_for(lambda: len(team.requests.get("slow", [])) == 1)  # the child is mid-call
    await sync_to_async(workers.kill)(first)
    await sync_to_async(workers.start)("w2", beat=True, **env)

    # The database is the truth: wait for the turn there (this test's own socket may lag on a
    # loaded machine; streaming to clients is covered by the other distributed tests).
    await wait_for(
        lambda: Run.objects.filter(parent__isnull=True, status=RunStatus.SUCCEEDED).exists(),
        timeout=60,
    )
    await ws.disconnect()

    def stored():
        runs = {r.agent_config["name"]: r for r in Run.objects.all()}
        messages = list(
            ChatMessage.objects.filter(session_id=frame["session_id"])
            .order_by("created_at")
            .values_list("role", "agent__name", "content", "status")
        )
        return runs, messages

    runs, messages = await database_sync_to_async(stored)()
    assert runs["slow"].status == RunStatus.SUCCEEDED and runs["slow"].answer == "slow recovered"
    assert runs["boss"].answer == "boss: done"
    assert len(team.requests["slow"]) == 2 and len(team.requests["boss"]) == 2
    assert [(role, name, content) for role, name, content, _ in messages] == [
        ("user", None, "go"),
        ("tool", "boss", ""),  # the delegation
        ("agent", "slow", "slow recovered"),
        ("agent", "boss", "boss: done"),
    ]
    assert all(status == MessageStatus.COMPLETED for *_, status in messages)


async def test_two_workers_never_advance_the_same_run_at_once(workers, user, team, fake_openai):
    await database_sync_to_async(make_team)(boss=[])
    team.script("boss", Reply(text_chunks=["only ", "once"], stall_seconds=1.0))
    env = worker_env(fake_openai)
    await sync_to_async(workers.start)("w1", **env)
    await sync_to_async(workers.start)("w2", **env)
    sent = await database_sync_to_async(turn_start)(
        user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="hi"
    )
    # The same task delivered again and again, to four free processes.
    again = [advance_run.delay(str(sent.run.id)).id for _ in range(5)]
    await wait_for(lambda: Run.objects.get(pk=sent.run.id).is_final)
    # The retried deliveries come back and find the run finished.
    await wait_until_async(lambda: tasks_logged_done(again, "w1", "w2"), timeout=30, interval=0.1)
    assert len(team.requests["boss"]) == 1
    run = await database_sync_to_async(Run.objects.get)(pk=sent.run.id)
    assert run.status == RunStatus.SUCCEEDED and run.answer == "only once"
    count = await database_sync_to_async(
        lambda: ChatMessage.objects.filter(run_id=run.id).count()
    )()
    assert count == 1
