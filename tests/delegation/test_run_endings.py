"""Every way a run can end closes its messages, tells the user plainly, and emits nothing after."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from agents.models import Agent
from chat.events import session_group
from chat.models import ChatMessage, MessageStatus
from delegation.models import Run, RunStatus
from delegation.runs.ending import run_stop
from delegation.sweeper import runs_sweep
from tests.chat.helpers import connect, send_frame
from tests.delegation.conftest import make_team
from tests.fake_openai import Reply, delegate, error, text

pytestmark = pytest.mark.django_db(transaction=True)


async def turn_events(user, text_: str = "question", *, linger: float = 0.0) -> list[dict]:
    """Send one message and collect its session's events up to the root's run.completed, then
    for `linger` more seconds. Events are read straight off the channel layer, as a socket
    would get them, so the listener can stay after the socket is gone."""
    frame = send_frame(text_)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(frame["session_id"]), channel)
    ws = await connect(user)
    await ws.send_json_to(frame)
    events = []
    try:
        while True:
            event = (await asyncio.wait_for(layer.receive(channel), timeout=20))["event"]
            events.append(event)
            if event["type"] == "run.completed" and event["agent"]["depth"] == 0:
                break
        await ws.disconnect()
        deadline = asyncio.get_running_loop().time() + linger
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            try:
                events.append((await asyncio.wait_for(layer.receive(channel), left))["event"])
            except TimeoutError:
                break
    finally:
        await layer.group_discard(session_group(frame["session_id"]), channel)
    return events


def after_end_of_its_run(events: list[dict]) -> list[dict]:
    """Events of a run that arrived after that run's own run.completed."""
    ended: set[str] = set()
    late = []
    for event in events:
        if event["run_id"] in ended:
            late.append(event)
        if event["type"] == "run.completed":
            ended.add(event["run_id"])
    return late


def repeated_seqs(events: list[dict]) -> list[tuple[str, int]]:
    counts = Counter((e["run_id"], e["seq"]) for e in events if e.get("seq") is not None)
    return [key for key, n in counts.items() if n > 1]


@database_sync_to_async
def messages_of(status: str | None = None) -> list[ChatMessage]:
    found = ChatMessage.objects.filter(role="agent").order_by("created_at")
    return list(found.filter(status=status) if status else found)


async def test_a_stream_cut_mid_answer_fails_the_run_and_closes_its_message(
    user, openai_entry_agent, fake_openai
):
    fake_openai.script(Reply(text_chunks=["Half ", "an ", "answer ", "and more"], cut_after=2))
    events = await turn_events(user, linger=0.5)

    assert await messages_of(MessageStatus.STREAMING) == []
    answer = (await messages_of())[0]
    assert answer.status == MessageStatus.FAILED and answer.content.startswith("Half an")
    closed = [
        e for e in events if e["type"] == "message.completed" and e["message_id"] == str(answer.id)
    ]
    assert closed and closed[0]["data"]["status"] == "failed"
    assert events[-1]["type"] == "run.completed" and events[-1]["data"]["status"] == "failed"
    assert after_end_of_its_run(events) == [] and repeated_seqs(events) == []


async def test_an_upstream_error_body_never_reaches_the_user(user, openai_entry_agent, fake_openai):
    fake_openai.script(error(500, "db password is hunter2 at 10.0.0.7"))
    events = await turn_events(user)

    shown = [e for e in events if e["type"] in {"error", "message.completed", "run.completed"}]
    assert shown and all("hunter2" not in str(e["data"]) for e in shown)
    assert all("Error code" not in str(e["data"]) for e in shown)
    note = [e for e in events if e["type"] == "message.completed"][-1]["data"]["text"]
    assert note == (
        "Sorry, I could not finish this: the model service is unavailable right now. "
        "Please try again later."
    )
    run = await database_sync_to_async(Run.objects.get)()
    assert run.error["code"] == "model_unavailable" and "hunter2" in run.error["detail"]


async def test_a_model_stalling_mid_answer_times_out_with_its_message_closed(
    user, openai_entry_agent, fake_openai, settings
):
    settings.OPENAI_TIMEOUT = 1.0
    fake_openai.script(Reply(text_chunks=["Slow ", "answer"], stall_after=1, stall_mid_seconds=2.5))
    events = await turn_events(user, linger=2.0)

    assert await messages_of(MessageStatus.STREAMING) == []
    run = await database_sync_to_async(Run.objects.get)()
    assert run.status == RunStatus.FAILED and run.error["code"] == "model_timeout"
    assert after_end_of_its_run(events) == [] and repeated_seqs(events) == []


async def test_a_run_stopped_while_its_model_has_not_answered_keeps_no_late_message(
    user, openai_entry_agent, fake_openai
):
    # The stop lands after the run's last fenced write and before the model's first word: the
    # late message is written unfenced, its events are dropped, and the run's next fenced
    # write fails, which removes it (the page never showed it).
    fake_openai.script(Reply(text_chunks=["Too ", "late"], stall_seconds=1.5))

    async def stop_while_the_model_is_silent() -> None:
        while True:
            await asyncio.sleep(0.1)
            running = await database_sync_to_async(
                lambda: Run.objects.filter(status=RunStatus.RUNNING).first()
            )()
            if running is not None and running.routing is not None:
                break
        await database_sync_to_async(run_stop)(run=running)

    stopper = asyncio.ensure_future(stop_while_the_model_is_silent())
    events = await turn_events(user, linger=2.5)  # the model answers meanwhile
    await stopper

    run = await database_sync_to_async(Run.objects.get)()
    assert run.status == RunStatus.CANCELLED
    messages = await messages_of()
    assert [m for m in messages if "late" in m.content] == []
    assert [m for m in messages if m.status == MessageStatus.STREAMING] == []
    assert [e for e in events if "late" in str(e["data"])] == []
    assert after_end_of_its_run(events) == [] and repeated_seqs(events) == []


async def test_a_timed_out_expert_is_closed_and_silent_after_the_turn_ends(user, team):
    await database_sync_to_async(make_team)(boss=["slow"], slow=[])
    team.script("boss", delegate("slow", reason="it knows"), text("Without the slow expert."))
    # The expert starts answering, then stalls; the sweeper times it out meanwhile.
    team.script(
        "slow",
        Reply(text_chunks=["Partial ", "thought ", "too late"], stall_after=1, stall_mid_seconds=3),
    )

    async def time_out_the_expert() -> None:
        while True:
            await asyncio.sleep(0.2)
            child = await database_sync_to_async(
                lambda: Run.objects.filter(depth=1, messages__isnull=False).first()
            )()
            if child is not None:
                break
        await database_sync_to_async(
            lambda: Run.objects.filter(pk=child.pk).update(deadline=timezone.now())
        )()
        await database_sync_to_async(runs_sweep)()

    sweeper = asyncio.ensure_future(time_out_the_expert())
    events = await turn_events(user, linger=3.5)  # the stalled stream wakes up meanwhile
    await sweeper

    child = await database_sync_to_async(Run.objects.get)(depth=1)
    assert child.status == RunStatus.TIMED_OUT
    child_message = [m for m in await messages_of() if m.run_id == child.id][0]  # its answer
    assert child_message.status == MessageStatus.FAILED and "too late" not in child_message.content
    closed = [
        e
        for e in events
        if e["type"] == "message.completed" and e["message_id"] == str(child_message.id)
    ]
    assert len(closed) == 1 and closed[0]["data"]["status"] == "failed"
    assert after_end_of_its_run(events) == [] and repeated_seqs(events) == []
    assert [e for e in events if "too late" in str(e["data"])] == []


async def test_a_model_that_always_delegates_never_passes_the_model_call_budget(
    user, team, settings
):
    settings.TURN_MAX_DELEGATIONS = 100  # the model-call budget is the one that binds
    settings.TURN_MAX_MODEL_CALLS = 12
    await database_sync_to_async(make_team)(boss=["helper"], helper=[])
    await database_sync_to_async(lambda: Agent.objects.filter(name="boss").update(max_steps=50))()
    team.always["boss"] = lambda body: delegate("helper") if body.get("tools") else text("final")
    events = await turn_events(user)

    calls = sum(len(r) for r in team.requests.values())
    assert calls <= settings.TURN_MAX_MODEL_CALLS
    root = await database_sync_to_async(Run.objects.get)(depth=0)
    assert root.tree_model_calls == calls
    assert events[-1]["data"]["status"] == "succeeded"


async def test_every_delegation_records_a_reason(user, team):
    await database_sync_to_async(make_team)(boss=["finance"], finance=[])
    team.script("boss", delegate("finance", "Q3?"), text("done"))  # the model gave no reason
    await turn_events(user, "Q3?")
    child = await database_sync_to_async(Run.objects.get)(depth=1)
    assert child.routing_reason.startswith("Chosen by Boss without a stated reason")


async def test_the_model_is_told_which_experts_the_user_may_not_use(user, team):
    def setup() -> None:
        make_team(boss=["finance", "hr"], finance=[], hr=[])
        from django.contrib.auth.models import Group

        Agent.objects.filter(name="finance").update(
            access_group=Group.objects.create(name="finance-staff")
        )

    await database_sync_to_async(setup)()
    team.script("boss", text("You need access."))
    await turn_events(user, "what is our budget?")
    system = team.requests["boss"][0]["messages"][0]["content"]
    assert "may not use (no access): finance (Finance; tags: finance): needs the " in system
    assert "'finance-staff' group" in system
    enum = team.requests["boss"][0]["tools"][0]["function"]["parameters"]["properties"]
    assert enum["target"]["enum"] == ["hr"]
