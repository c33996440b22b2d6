"""Routing in real turns through the openai client: the router, its fallback, debug events,
rule-started delegations, STRICT refusals, memory per mode and per user."""

from __future__ import annotations

import uuid

import pytest
from channels.db import database_sync_to_async

from agents.knowledge.services import document_upload, knowledge_base_create
from agents.models import Agent
from delegation.models import Run
from delegation.routing.models import Mode, SessionMemory
from delegation.routing.seeds import routing_seed
from delegation.turns import turn_start
from delegation.usage.models import UsageRecord
from tests.chat.helpers import connect, send_frame
from tests.delegation.conftest import make_team
from tests.delegation.test_run_endings import turn_events
from tests.factories import make_user
from tests.fake_openai import Reply, error, text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


def team_with_policy(name: str = "departments", **policy_fields) -> None:
    make_team(boss=["finance", "hr"], finance=[], hr=[])
    policy = routing_seed(name=name, entry_agents=[Agent.objects.get(name="boss")])
    for field, value in policy_fields.items():
        setattr(policy, field, value)
    policy.save()


async def root() -> Run:
    return await database_sync_to_async(Run.objects.get)(depth=0)


async def test_a_rule_starts_the_turn_with_its_expert_and_records_why(user, team):
    await database_sync_to_async(team_with_policy)()
    team.script("finance", text("Revenue is up."))
    team.script("boss", text("Finance says revenue is up."))
    events = await turn_events(user, "What does finance say about revenue?")

    assert len(team.requests["boss"]) == 1  # the rule, not the model, chose the expert
    child = await database_sync_to_async(Run.objects.get)(depth=1)
    assert child.agent_config["name"] == "finance" and child.routing_reason
    decision = (await root()).routing
    assert decision["matched_rule"] == "finance" and decision["target"] == "finance"
    assert decision["mode"] == Mode.CHAT and decision["policy"] == "departments"
    assert "CHAT mode" in team.requests["finance"][0]["messages"][0]["content"]
    done = [e for e in events if e["type"] == "run.completed" and e["agent"]["depth"] == 0][0]
    assert done["data"]["mode"] == Mode.CHAT
    assert [e for e in events if e["type"] == "routing.decided"] == []  # no debug asked


def router_reply(body: dict) -> Reply:
    return text('{"target": "hr", "reason": "It is about people."}')


async def test_the_router_model_decides_what_no_rule_does(user, team):
    await database_sync_to_async(team_with_policy)("site-assistant")
    team.always["the router"] = router_reply
    team.script("hr", text("HR here."))
    team.script("boss", text("Done."))
    await turn_events(user, "Who should I talk to about my new colleague?")
    decision = (await root()).routing
    assert decision["target"] == "hr" and decision["reason"] == "It is about people."
    assert not decision["fallback_used"] and decision["router_latency_ms"] is not None


@pytest.mark.parametrize(
    "failure",
    [
        error(500, "router exploded"),
        Reply(text_chunks=["not json at all"]),
        Reply(text_chunks=['{"target": "nobody"}']),
        Reply(text_chunks=['{"target": "hr"}'], stall_seconds=1.5),
    ],
    ids=["500", "garbage", "unknown-target", "timeout"],
)
async def test_a_failing_router_falls_back_to_the_tags_and_the_turn_is_answered(
    user, team, failure
):
    await database_sync_to_async(team_with_policy)("site-assistant", router_timeout=0.5)
    team.always["the router"] = lambda body: failure
    team.script("hr", text("HR answers."))
    team.script("boss", text("Done."))
    events = await turn_events(user, "a question for hr about onboarding")
    decision = (await root()).routing
    assert decision["fallback_used"] and decision["target"] == "hr"
    assert "router failed" in decision["reason"] and "“hr”" in decision["reason"]
    assert events[-1]["data"]["status"] == "succeeded"


async def test_staff_who_ask_for_debug_get_the_decision_event(user, team, admin_user):
    await database_sync_to_async(team_with_policy)()
    team.script("finance", text("ok"))
    team.script("boss", text("ok"))
    session = uuid.uuid4()
    await database_sync_to_async(turn_start)(
        user=admin_user,
        session_id=session,
        message_id=uuid.uuid4(),
        text="finance budget",
        flags={"debug": True},
    )
    run = await database_sync_to_async(lambda: Run.objects.get(depth=0, user=admin_user))()
    assert run.routing_request == {"debug": True}


async def test_debug_events_reach_only_who_may_view_runs(user, team, admin_user):
    await database_sync_to_async(team_with_policy)()
    approver = await database_sync_to_async(make_user)("approver", is_staff=True)  # no perms
    for who, shown in ((admin_user, True), (approver, False), (user, False)):
        team.script("finance", text("ok"))
        team.script("boss", text("ok"))
        ws = await connect(who)
        await ws.send_json_to({**send_frame("finance budget"), "debug": True})
        seen = []
        while True:
            event = await ws.receive_json_from(timeout=15)
            seen.append(event["type"])
            if event["type"] == "run.completed" and event["agent"]["depth"] == 0:
                break
        await ws.disconnect()
        assert ("routing.decided" in seen) is shown


async def test_strict_with_nothing_in_the_knowledge_refuses_and_names_what_is_missing(user, team):
    def setup() -> None:
        team_with_policy()
        kb = knowledge_base_create(name="fin", agents=[Agent.objects.get(name="finance")])
        document_upload(
            kb=kb,
            filename="a.md",
            data=b"# Travel\n\nTrain tickets are refunded.",
            title="Travel policy",
            background=False,
        )

    await database_sync_to_async(setup)()
    team.script("finance", tool_call("kb_search", {"query": "board salary"}), text("It is 5M."))
    team.script("boss", text("The board salary is 5M."))
    events = await turn_events(user, "嚴格：finance, what is the board salary?")
    assert (await root()).routing["mode"] == Mode.STRICT
    answers = [e["data"]["text"] for e in events if e["type"] == "message.completed"]
    assert all("5M" not in a for a in answers)
    assert "I found nothing in Fin about “board salary”." in answers[-1]


async def test_memory_is_written_by_mode_and_never_shared_between_users(user, other_user, team):
    await database_sync_to_async(team_with_policy)()
    team.always["finance"] = lambda body: text("ok")
    team.always["hr"] = lambda body: text("ok")
    team.always["boss"] = lambda body: text("ok")
    await turn_events(user, "finance: the travel budget")  # CHAT
    memory = await database_sync_to_async(SessionMemory.objects.get)(user=user)
    assert memory.data["last_intent"] == "finance" and "budget" in memory.data["interested_topics"]
    await turn_events(other_user, "嚴格：人資的特休規定")  # STRICT: only the intent
    theirs = await database_sync_to_async(SessionMemory.objects.get)(user=other_user)
    assert theirs.data == {"last_intent": "strict-request + hr", "last_mode": "STRICT"} | {
        "last_expert": "hr"
    }
    assert await database_sync_to_async(SessionMemory.objects.filter(user=user).count)() == 1


def test_the_memory_api_shows_only_your_own_and_clears_it(user, other_user, client):
    from chat.models import ChatSession

    session = ChatSession.objects.create(id=uuid.uuid4(), user=user)
    data = {"last_intent": "finance", "last_mode": "CHAT"}
    SessionMemory.objects.create(session=session, user=user, data=data)
    client.force_login(other_user)
    assert client.get(f"/api/v1/sessions/{session.id}/memory/").status_code == 404
    client.force_login(user)
    shown = client.get(f"/api/v1/sessions/{session.id}/memory/").json()["last_intent"]
    assert shown == "A question to talk through"  # no agent named finance: the mode, in words
    assert client.delete(f"/api/v1/sessions/{session.id}/memory/").status_code == 204
    assert not SessionMemory.objects.filter(user=user).exists()


def test_staff_see_the_routing_in_the_run_detail_and_users_do_not(user, admin_user, client):
    from chat.models import ChatSession
    from delegation.runs.create import run_create

    agent = Agent.objects.create(name="solo", display_name="Solo")
    for who in (user, admin_user):
        session = ChatSession.objects.create(id=uuid.uuid4(), user=who, agent=agent)
        run = run_create(agent=agent, user=who, session=session, task="t", transcript=[])
        Run.objects.filter(pk=run.pk).update(routing={"mode": "STRICT", "policy": "p"})
        client.force_login(who)
        body = client.get(f"/api/v1/runs/{run.pk}/").json()
        assert body["mode"] == "STRICT"
        assert (body["routing"] is not None) is who.is_staff


def test_the_rest_send_body_carries_the_routing_flags(user, client, settings):
    settings.TASKS_RUN_SYNC = False
    Agent.objects.create(name="solo", display_name="Solo", is_entry=True)
    client.force_login(user)
    session = uuid.uuid4()
    response = client.post(
        f"/api/v1/sessions/{session}/messages/",
        {"text": "hello", "force_strict": True},
        content_type="application/json",
    )
    assert response.status_code == 202
    run = Run.objects.get(pk=response.json()["run_id"])
    assert run.routing_request == {"force_strict": True}


async def test_the_router_call_is_counted_and_ledgered_like_any_call(user, team):
    await database_sync_to_async(team_with_policy)("site-assistant")
    team.always["the router"] = lambda body: Reply(
        text_chunks=['{"target": "hr", "reason": "people"}'], prompt_tokens=40, completion_tokens=9
    )
    team.script("hr", text("HR here."))
    team.script("boss", text("Done."))
    await turn_events(user, "Who should I talk to about my new colleague?")
    turn = await root()
    calls = sum(len(requests) for requests in team.requests.values())
    assert calls == 3  # the router, the expert, the entry agent
    rows = await database_sync_to_async(list)(UsageRecord.objects.order_by("created_at"))
    assert len(rows) == calls == turn.tree_model_calls
    router_row = rows[0]
    assert (router_row.run_id, router_row.prompt_tokens, router_row.completion_tokens) == (
        turn.id,
        40,
        9,
    )
    assert turn.usage["prompt_tokens"] >= 40  # the entry run's usage includes it


async def test_a_turn_whose_model_calls_are_spent_is_not_routed_by_the_model(user, team, settings):
    settings.TURN_MAX_MODEL_CALLS = 1  # the entry agent's own answer only
    await database_sync_to_async(team_with_policy)("site-assistant")
    team.always["the router"] = router_reply
    team.script("boss", text("I answer myself."))
    await turn_events(user, "a question for hr about onboarding")
    turn = await root()
    assert "the router" not in team.requests  # never asked: no call was left for it
    assert turn.routing["fallback_used"] and "no model call left" in turn.routing["reason"]
    assert turn.tree_model_calls <= 1
