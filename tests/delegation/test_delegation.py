"""Delegation through the real openai client: depth, guards, fan-out, failures, budget, stop."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group

from agents.models import Agent
from chat.models import ChatMessage, MessageRole, MessageStatus
from delegation.models import Run, RunStatus
from delegation.sweeper import runs_sweep
from delegation.tree.budget import budget_tokens_used
from tests.chat.helpers import connect, send_frame
from tests.delegation.conftest import make_team
from tests.fake_openai import Reply, delegate, text, tool_calls
from tests.waiting import in_process_tasks_done, wait_until_async

pytestmark = pytest.mark.django_db(transaction=True)


async def turn(user, text_: str = "help me", timeout: float = 15) -> list[dict]:
    """Send one message and collect events until the root run completes."""
    ws = await connect(user)
    await ws.send_json_to(send_frame(text_))
    events = []
    while True:
        event = await ws.receive_json_from(timeout=timeout)
        events.append(event)
        if event["type"] == "run.completed" and event["agent"]["depth"] == 0:
            break
    await ws.disconnect()
    return events


def tool_results(request: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


@database_sync_to_async
def runs() -> list[Run]:
    return list(Run.objects.order_by("depth", "created_at"))


async def test_depth_one_delegation_streams_tagged_and_is_recorded(user, team):
    await database_sync_to_async(make_team)(boss=["finance"], finance=[])
    team.script(
        "boss",
        delegate("finance", "What is the Q3 budget?", reason="money"),
        text("Finance says ", "60."),
    )
    team.script("finance", text("The budget ", "is 60."))
    events = await turn(user, "Q3 budget?")

    started = of_type(events, "delegation.started")[0]
    assert started["agent"]["name"] == "boss" and started["data"]["target"] == "finance"
    assert started["data"]["task"] == "What is the Q3 budget?"
    child_messages = [
        e for e in events if e["type"] == "message.completed" and e["agent"]["name"] == "finance"
    ]
    assert child_messages[0]["data"]["text"] == "The budget is 60."
    assert child_messages[0]["agent"] == {
        "kind": "sub",
        "name": "finance",
        "display_name": "Finance",
        "depth": 1,
        "path": ["boss", "finance"],
    }
    done = of_type(events, "delegation.completed")[0]
    assert done["data"]["status"] == "succeeded" and done["data"]["answer"] == "The budget is 60."
    assert done["data"]["summary"] == "Finance answered"  # a sentence, not the answer
    assert started["data"]["summary"] == "Asking Finance…"
    order = [e["type"] for e in events]
    assert order.index("delegation.started") < order.index("delegation.completed")
    assert events[-2]["data"]["text"] == "Finance says 60."
    assert tool_results(team.requests["boss"][1]) == [
        {"ok": True, "result": {"agent": "Finance", "answer": "The budget is 60."}}
    ]

    root, child = await runs()
    assert child.parent_id == root.id and child.root_id == root.id
    assert child.task == "What is the Q3 budget?" and child.routing_reason == "money"
    assert child.status == RunStatus.SUCCEEDED and child.answer == "The budget is 60."
    assert child.usage["total_tokens"] == 18 and root.tree_model_calls == 3
    assert root.tree_delegations == 1
    assert await database_sync_to_async(budget_tokens_used)(root_id=root.id) == 54


async def test_depth_two_chain_works_and_depth_three_is_refused(user, team):
    await database_sync_to_async(make_team)(
        boss=["finance"], finance=["sql"], sql=["deep"], deep=[]
    )
    team.script("boss", delegate("finance"), text("boss done"))
    team.script("finance", delegate("sql"), text("finance done"))
    team.script("sql", delegate("deep"), text("sql done"))
    events = await turn(user)
    assert "delegate" not in [
        t["function"]["name"] for t in team.requests["sql"][0].get("tools", [])
    ]
    refusal = tool_results(team.requests["sql"][1])[0]
    assert refusal["error"]["code"] == "delegation_depth"
    assert "deep" not in team.requests
    assert events[-2]["data"]["text"] == "boss done"
    depths = {r.agent_config["name"]: (r.depth, r.status) for r in await runs()}
    assert depths == {
        "boss": (0, "succeeded"),
        "finance": (1, "succeeded"),
        "sql": (2, "succeeded"),
    }
    refused = [
        e for e in of_type(events, "delegation.completed") if e["data"]["status"] == "refused"
    ]
    assert refused[0]["agent"]["path"] == ["boss", "finance", "sql"]


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ("ghost", "delegation_unknown_target"),
        ("hr", "delegation_not_allowed"),
        ("disabled", "delegation_unavailable"),
        ("private", "delegation_unavailable"),
        ("boss", "delegation_cycle"),
    ],
)
async def test_guard_refusals_reach_the_model_and_the_user(user, team, target, code):
    def setup():
        agents = make_team(
            boss=["finance", "disabled", "private"],
            finance=["boss"],
            disabled=[],
            private=[],
            hr=[],
        )
        Agent.objects.filter(name="disabled").update(enabled=False)
        Agent.objects.filter(name="private").update(delegatable=False)
        return agents

    await database_sync_to_async(setup)()
    if target == "boss":  # A → B → A
        team.script("boss", delegate("finance"), text("boss done"))
        team.script("finance", delegate("boss"), text("finance done"))
        caller = "finance"
    else:
        team.script("boss", delegate(target), text("boss done"))
        caller = "boss"
    events = await turn(user)
    result = tool_results(team.requests[caller][1])[-1]
    assert result["ok"] is False and result["error"]["code"] == code
    refused = [
        e for e in of_type(events, "delegation.completed") if e["data"]["status"] == "refused"
    ]
    assert refused and refused[0]["data"]["error"]["code"] == code
    assert refused[0]["data"]["answer"] == ""
    assert refused[0]["data"]["summary"].startswith("Could not ask ")  # why: in `error`
    assert events[-1]["data"]["status"] == "succeeded"  # the turn still ends with an answer
    assert len(await runs()) == (2 if target == "boss" else 1)


async def test_user_without_the_targets_group_is_refused_and_a_member_succeeds(
    user, other_user, team
):
    def setup():
        make_team(boss=["hr"], hr=[])
        group = Group.objects.create(name="hr-staff")
        Agent.objects.filter(name="hr").update(access_group=group)
        other_user.groups.add(group)

    await database_sync_to_async(setup)()
    team.always["boss"] = lambda body: (
        delegate("hr") if body["messages"][-1]["role"] == "user" else text("boss done")
    )
    await turn(user)
    assert tool_results(team.requests["boss"][1])[0]["error"]["code"] == "delegation_forbidden"
    assert "hr" not in team.requests
    offered = team.requests["boss"][0].get("tools", [])
    assert "delegate" not in [t["function"]["name"] for t in offered]  # not offered to alice

    await turn(other_user)
    assert len(team.requests["hr"]) == 1
    assert tool_results(team.requests["boss"][-1])[0]["ok"] is True


async def test_delegate_tool_lists_exactly_the_usable_targets_with_descriptions(user, team):
    def setup():
        make_team(boss=["finance", "hr", "off"], finance=[], hr=[], off=[])
        Agent.objects.filter(name="finance").update(
            description="Money matters.", tags=["finance", "财务"]
        )
        Agent.objects.filter(name="off").update(enabled=False)

    await database_sync_to_async(setup)()
    await turn(user)
    tool = next(t for t in team.requests["boss"][0]["tools"] if t["function"]["name"] == "delegate")
    assert tool["function"]["parameters"]["properties"]["target"]["enum"] == ["finance", "hr"]
    assert (
        "- finance (Finance): Money matters. Tags: finance, 财务."
        in tool["function"]["description"]
    )


async def test_three_children_run_in_parallel_and_the_caller_resumes_once(user, team):
    await database_sync_to_async(make_team)(boss=["a", "b", "c"], a=[], b=[], c=[])
    team.script(
        "boss",
        tool_calls(
            ("delegate", {"target": "a", "task": "x"}),
            ("delegate", {"target": "b", "task": "y"}),
            ("delegate", {"target": "c", "task": "z"}),
        ),
        text("all three answered"),
    )
    for name in "abc":
        team.script(name, Reply(text_chunks=[f"{name} says hi"], stall_seconds=0.4))
    events = await turn(user)
    assert team.fake.max_active == 3  # the three experts were working at the same time
    assert len(team.requests["boss"]) == 2
    answers = [r["result"]["answer"] for r in tool_results(team.requests["boss"][1])]
    assert answers == ["a says hi", "b says hi", "c says hi"]
    boss_messages = [e for e in of_type(events, "message.completed") if e["agent"]["depth"] == 0]
    assert [m["data"]["text"] for m in boss_messages] == ["all three answered"]
    assert len(of_type(events, "delegation.completed")) == 3


async def test_child_past_its_deadline_resumes_the_caller_with_an_error(user, team, settings):
    settings.CHILD_DEADLINE_SECONDS = 1
    await database_sync_to_async(make_team)(boss=["slow"], slow=[])
    team.script("boss", delegate("slow"), text("Sorry, the expert was too slow."))
    team.script("slow", Reply(text_chunks=["too late"], stall_seconds=2.5))
    ws = await connect(user)
    await ws.send_json_to(send_frame("go"))
    # The sweep times the expert out once its 1 s deadline is past, however late it started.
    timed_out = await wait_until_async(
        database_sync_to_async(lambda: runs_sweep()["timed_out"]),
        interval=0.1,
        what="the sweep to time the expert out",
    )
    assert timed_out == 1
    events = []
    while not (
        events and events[-1]["type"] == "run.completed" and events[-1]["agent"]["depth"] == 0
    ):
        events.append(await ws.receive_json_from(timeout=10))
    done = of_type(events, "delegation.completed")[0]
    assert done["data"]["status"] == "timed_out"
    assert done["data"]["answer"].startswith("I asked the Slow but it did not answer in time")
    assert done["data"]["summary"] == "Slow did not answer in time"
    result = tool_results(team.requests["boss"][1])[0]
    assert result["error"]["code"] == "delegation_timed_out" and result["status"] == "timed_out"
    assert events[-1]["data"]["status"] == "succeeded"
    await in_process_tasks_done()  # the stalled child's answer arrives late and is dropped
    slow = (await runs())[1]
    assert slow.status == RunStatus.TIMED_OUT and "too late" not in slow.answer
    texts = await database_sync_to_async(
        lambda: list(slow.messages.values_list("content", flat=True))
    )()
    assert not any("too late" in t for t in texts)
    await ws.disconnect()


async def test_a_model_that_always_delegates_stops_at_the_turn_budget(user, team, settings):
    settings.TURN_MAX_DELEGATIONS = 3
    settings.TURN_MAX_MODEL_CALLS = 9
    await database_sync_to_async(make_team)(boss=["helper"], helper=[])
    await database_sync_to_async(lambda: Agent.objects.filter(name="boss").update(max_steps=50))()
    team.always["boss"] = lambda body: delegate("helper") if body.get("tools") else text("final")
    events = await turn(user)
    calls = sum(len(r) for r in team.requests.values())
    assert calls <= settings.TURN_MAX_MODEL_CALLS  # the budget bounds the whole tree, exactly
    assert len(team.requests["helper"]) == 3
    codes = [r.get("error", {}).get("code") for r in tool_results(team.requests["boss"][-1])]
    assert "delegation_budget" in codes
    assert "tools" not in team.requests["boss"][-1]  # the last call had to answer
    assert events[-2]["data"]["text"] == "final" and events[-1]["data"]["status"] == "succeeded"
    root = (await runs())[0]
    assert root.tree_delegations == 3 and root.tree_model_calls == calls


async def test_stopping_a_turn_cancels_every_run_in_the_tree(user, team):
    await database_sync_to_async(make_team)(boss=["slow"], slow=["slower"], slower=[])
    team.script("boss", delegate("slow"))
    team.script("slow", delegate("slower"))
    team.script("slower", Reply(text_chunks=["never shown"], stall_seconds=1.5))
    ws = await connect(user)
    await ws.send_json_to(send_frame("go"))
    events = [await ws.receive_json_from(timeout=5)]
    while len(of_type(events, "delegation.started")) < 2:
        events.append(await ws.receive_json_from(timeout=5))
    await ws.send_json_to({"type": "run.cancel", "run_id": events[0]["run_id"]})
    cancelled = set()
    while len(cancelled) < 3:
        event = await ws.receive_json_from(timeout=5)
        if event["type"] == "run.completed":
            assert event["data"]["status"] == "cancelled"
            cancelled.add(event["agent"]["name"])
    assert cancelled == {"boss", "slow", "slower"}
    await in_process_tasks_done()  # the stalled expert's answer comes back to a cancelled run
    assert all(r.status == RunStatus.CANCELLED for r in await runs())
    # The stopped callers' calls stay cancelled (a reload marks the turn stopped by them).
    calls = await database_sync_to_async(
        lambda: sorted(
            ChatMessage.objects.filter(role=MessageRole.TOOL).values_list("status", flat=True)
        )
    )()
    assert calls == [MessageStatus.CANCELLED, MessageStatus.CANCELLED]
    leftovers = []
    while not await ws.receive_nothing(timeout=0.2):
        leftovers.append(await ws.receive_json_from())
    assert not [e for e in leftovers if e["type"].startswith("message.")]
    await ws.disconnect()


async def test_history_replays_the_tree_exactly_as_it_streamed(user, team):
    await database_sync_to_async(make_team)(boss=["finance"], finance=[])
    team.script("boss", delegate("finance"), text("done: ", "60"))
    team.script(
        "finance", tool_calls(("calculate", {"expression": "1200*0.05"})), text("It is ", "60.")
    )
    await database_sync_to_async(
        lambda: Agent.objects.filter(name="finance").update(tool_keys=["calculate"])
    )()
    events = await turn(user)
    streamed: dict[str, dict] = {}  # message id -> its last event, in order of first event
    for event in events:
        if event["message_id"]:
            streamed.setdefault(event["message_id"], event)
            if event["type"] in ("message.completed", "tool.result", "delegation.completed"):
                streamed[event["message_id"]] = event
    ws = await connect(user)
    await ws.send_json_to({"type": "session.join", "session_id": events[0]["session_id"]})
    snapshot = (await ws.receive_json_from(timeout=5))["data"]["messages"]
    await ws.disconnect()
    assert [m["id"] for m in snapshot] == list(streamed)
    for message in snapshot:
        event = streamed[message["id"]]
        assert message["agent"] == event["agent"] or message["role"] == "user"
        if message["role"] == "agent":
            assert message["content"] == event["data"]["text"]
        elif message["role"] == "tool" and message["tool"]["name"] == "delegate":
            assert message["tool"]["delegation"]["status"] == event["data"]["status"]
        elif message["role"] == "tool":
            assert message["tool"]["result"] == event["data"]["result"]
    assert [m["agent"]["depth"] if m["agent"] else None for m in snapshot] == [None, 0, 1, 1, 0]
