"""Agents and tools (user and staff views), and runs with their delegation tree."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group

from agents.models import Agent
from delegation.models import Run, RunStatus
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents(entry_agent):
    hr = make_agent("hr", tags=["people"], description="People matters.")
    group = Group.objects.create(name="hr-staff")
    secret = make_agent("secret", access_group=group)
    off = make_agent("off", enabled=False)
    internal = make_agent("internal", delegatable=False)
    return {"hr": hr, "secret": secret, "off": off, "internal": internal}


def test_users_see_only_agents_they_may_use(api, agents):
    names = {a["name"] for a in api.get("/api/v1/agents/").json()}
    assert names == {"assistant", "hr", "internal"}
    available = api.get("/api/v1/agents/available/").json()
    assert {a["name"] for a in available} == {"assistant", "hr"}
    hr = next(a for a in available if a["name"] == "hr")
    assert hr["description"] == "People matters." and hr["tags"] == ["people"]
    assert api.get("/api/v1/agents/secret/").status_code == 404
    assert api.get("/api/v1/agents/off/").status_code == 404
    assert "system_prompt" not in api.get("/api/v1/agents/hr/").json()


def test_staff_create_update_and_disable_with_admin_validation(staff_api, api, agents):
    created = staff_api.post(
        "/api/v1/agents/",
        {
            "name": "finance",
            "display_name": "Finance",
            "tool_keys": ["calculate"],
            "allowed_subagents": ["hr"],
            "tags": ["money"],
            "max_steps": 4,
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["version"] == 1 and created.json()["allowed_subagents"] == ["hr"]
    finance = Agent.objects.get(name="finance")
    assert finance.revisions.count() == 1

    updated = staff_api.patch("/api/v1/agents/finance/", {"max_steps": 6}, format="json")
    assert updated.json()["max_steps"] == 6 and updated.json()["version"] == 2
    disabled = staff_api.patch("/api/v1/agents/finance/", {"enabled": False}, format="json")
    assert disabled.json()["enabled"] is False
    assert api.get("/api/v1/agents/finance/").status_code == 404

    for body, field in [
        ({"tool_keys": ["rm_rf"]}, "tool_keys"),
        ({"allowed_subagents": ["finance"]}, "allowed_subagents"),
        ({"max_steps": 0}, "max_steps"),
        ({"temperature": 5}, "temperature"),
        ({"allowed_subagents": ["ghost"]}, "allowed_subagents"),
    ]:
        response = staff_api.patch("/api/v1/agents/finance/", body, format="json")
        assert response.status_code == 400, (body, response.json())
        assert field in response.json()["error"]["details"]
    assert Agent.objects.get(name="finance").version == 3


def test_only_staff_may_write_agents_or_read_tools(api, agents):
    assert (
        api.post("/api/v1/agents/", {"name": "x", "display_name": "X"}, format="json").status_code
        == 403
    )
    assert api.patch("/api/v1/agents/hr/", {"max_steps": 2}, format="json").status_code == 403
    assert api.get("/api/v1/tools/").status_code == 403


def test_tools_list_the_registry_with_schemas(staff_api):
    tools = {t["key"]: t for t in staff_api.get("/api/v1/tools/").json()}
    assert tools["calculate"]["parameters"]["required"] == ["expression"]


@pytest.mark.django_db(transaction=True)
def test_run_shows_its_delegation_tree_and_can_be_cancelled(api, mallory_api, user):
    from agents.demo import seed_demo_agents

    seed_demo_agents()
    sid = uuid.uuid4()
    sent = api.post(
        f"/api/v1/sessions/{sid}/messages/",
        {"text": "budget check: what is 1200*0.05?"},
        format="json",
    ).json()
    tree = api.get(f"/api/v1/runs/{sent['run_id']}/").json()
    assert tree["status"] == "succeeded" and tree["agent"]["name"] == "assistant"
    finance = tree["children"][0]
    assert finance["agent"]["path"] == ["assistant", "finance"]
    assert finance["children"][0]["agent"]["name"] == "math"
    assert finance["children"][0]["usage"]["total_tokens"] > 0
    assert tree["turn"]["delegations"] == 2 and tree["duration_ms"] is not None
    assert mallory_api.get(f"/api/v1/runs/{sent['run_id']}/").status_code == 404
    assert mallory_api.post(f"/api/v1/runs/{sent['run_id']}/cancel/").status_code == 404

    run = Run.objects.get(pk=sent["run_id"])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    cancelled = api.post(f"/api/v1/runs/{run.pk}/cancel/")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
