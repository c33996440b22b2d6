"""Agent states and the activity log for a depth-2 turn: while the deepest expert waits for a
person its callers wait for experts; one activity row per notable event, filterable and
exported."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from delegation.humans.models import Activity, InboxItem
from tests.factories import grant, make_user
from tests.fake_openai import delegate, error, text, tool_call
from tests.humans.conftest import agent
from tests.humans.helpers import client, decide, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


def depth_two(team):
    math = agent("math", tool_keys=["ask_human"], validate_answers="rules")
    fin = agent("fin", subagents=(math,))
    agent("boss", is_entry=True, subagents=(fin,))
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: 60k."))
    team.script("fin", delegate("math", "add it up"), text("Fin: 60k."))
    team.script("math", tool_call("ask_human", {"question": "Which quarter?"}), text("60000"))


def states(staff) -> dict[str, dict]:
    return {row["name"]: row for row in client(staff).get("/api/v1/agent-states/").json()}


def test_states_of_a_depth_two_turn_waiting_for_a_person_then_idle(user, staff, team):
    grant(staff, "agents.view_agent")  # the approver also reads the agents' states
    depth_two(team)
    root = start(user)
    now = states(staff)
    assert {name: row["state"] for name, row in now.items()} == {
        "boss": "blocked_internal",
        "fin": "blocked_internal",
        "math": "blocked_user",
    }
    assert now["math"]["blocked_user"] == 1 and now["math"]["oldest_wait"] is not None
    assert now["math"]["text"].startswith("waiting for a human 1 (oldest ")
    assert now["boss"]["text"].startswith("waiting for experts 1 (oldest ")
    admin = Client()
    admin.force_login(make_user("root", is_staff=True, is_superuser=True))
    page = admin.get("/admin/agents/agent/").content.decode()
    assert "waiting for a human 1 (oldest" in page and "waiting for experts 1" in page

    item = InboxItem.objects.get()
    assert decide(client(staff), item.id, decision="approve", answer="Q3").status_code == 200
    assert {row["state"] for row in states(staff).values()} == {"idle"}
    assert states(staff)["math"]["quality"]["valid"] == 1

    kinds = list(
        Activity.objects.filter(root_id=root.id)
        .order_by("created_at", "id")
        .values_list("kind", "agent_name")
    )
    assert kinds == [
        ("delegation_asked", "boss"),
        ("delegation_asked", "fin"),
        ("escalation_raised", "math"),
        ("escalation_decided", "math"),
        ("validation", "math"),
        ("delegation_answered", "math"),
        ("delegation_answered", "fin"),
    ]
    decided = Activity.objects.get(kind="escalation_decided")
    assert decided.actor == staff and decided.user == user
    assert "answered by stella" in decided.summary


def test_the_activity_log_filters_and_exports(user, staff, team):
    grant(staff, "humans.view_activity")  # the approver also reads the activity log
    depth_two(team)
    root = start(user)
    item = InboxItem.objects.get()
    decide(client(staff), item.id, decision="approve", answer="Q3")
    api = client(staff)
    rows = api.get("/api/v1/activity/", {"run": str(root.id), "kind": "delegation_asked"}).json()
    assert [r["agent_name"] for r in rows["results"]] == ["fin", "boss"]  # newest first
    assert api.get("/api/v1/activity/", {"agent": "math"}).json()["results"][0]["kind"] == (
        "delegation_answered"
    )
    assert api.get("/api/v1/activity/", {"kind": "nonsense"}).status_code == 400
    export = api.get("/api/v1/activity/export/", {"run": str(root.id)}, HTTP_ACCEPT="text/csv")
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(export.content.decode())))
    assert table[0][:3] == ["created_at", "kind", "agent_name"]
    assert [row[1] for row in table[1:]][:2] == ["delegation_asked", "delegation_asked"]
    assert len(table) == 8
    denied = client(user).get("/api/v1/activity/export/")
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission_denied"
    assert client(user).get("/api/v1/activity/").status_code == 403
    assert client(user).get("/api/v1/agent-states/").status_code == 403


def test_a_failed_run_and_a_refused_delegation_are_activity_rows(user, team):
    agent("boss", is_entry=True, subagents=(agent("fin"),))
    team.script("boss", delegate("nobody", "help"), error(500, "upstream exploded"))
    root = start(user)
    rows = dict(Activity.objects.filter(root_id=root.id).values_list("kind", "summary"))
    assert "could not ask nobody" in rows["delegation_refused"]
    assert rows["error"].startswith("Boss failed: ") and "upstream" not in rows["error"]
    assert Activity.objects.get(kind="error").data["code"] == "model_unavailable"
