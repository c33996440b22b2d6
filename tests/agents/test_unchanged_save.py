"""Saving an agent without a change makes no new version: in admin (a browser's "\r\n" line
ends included) and over REST (the definition as GET returns it, PATCHed back)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Agent
from agents.services import agent_save
from tests.agents.test_admin import agent_data, change_url
from tests.api.conftest import token_client
from tests.factories import grant, make_agent, make_user, model_perms

pytestmark = pytest.mark.django_db


@pytest.fixture
def helper() -> Agent:
    return make_agent(
        "helper",
        description="Answers questions.\nIn two lines.",
        system_prompt="Be helpful.\nBe brief.\n\nCite.",
        tool_keys=["calculate", "create_task"],
        fallback_chain=["retry", "low_confidence"],
        require_approval=True,
        approval_tool_keys=["create_task"],
        turn_max_cost=Decimal("1.5"),
        temperature=0.5,
    )


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def test_an_admin_save_with_browser_line_ends_makes_no_version(admin_client, helper):
    data = agent_data(
        helper,
        system_prompt=crlf(helper.system_prompt),
        description=crlf(helper.description),
        fallback_chain="retry, low_confidence",
        require_approval=True,
        approval_tool_keys=["create_task"],
        turn_max_cost="1.50",
        validate_answers="off",
        answer_min_chars=0,
        answer_max_chars=0,
    )
    response = admin_client.post(change_url(helper), data)
    assert response.status_code == 302, response.content[:2000]
    after = Agent.objects.get(pk=helper.pk)
    assert after.version == helper.version
    assert helper.revisions.count() == 1


def test_an_admin_save_with_a_real_change_is_a_version_with_unix_line_ends(admin_client, helper):
    data = agent_data(
        helper,
        system_prompt="Be kind.\r\nBe brief.",
        fallback_chain="retry, low_confidence",
        require_approval=True,
        approval_tool_keys=["create_task"],
        turn_max_cost="1.5",
        validate_answers="off",
    )
    assert admin_client.post(change_url(helper), data).status_code == 302
    after = Agent.objects.get(pk=helper.pk)
    assert after.version == helper.version + 1
    assert after.system_prompt == "Be kind.\nBe brief."


def test_a_rest_patch_of_the_definition_as_read_makes_no_version(db, helper):
    staffer = make_user("staffer", is_staff=True)
    api = token_client(grant(staffer, *model_perms("agents.agent", actions="view add change")))
    body = api.get("/api/v1/agents/helper/").json()
    editable = {k: v for k, v in body.items() if k not in {"knowledge_bases", "stale_tool_keys"}}
    editable["system_prompt"] = crlf(editable["system_prompt"])
    response = api.patch("/api/v1/agents/helper/", editable, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["version"] == helper.version
    only_chain = api.patch(
        "/api/v1/agents/helper/", {"fallback_chain": ["retry", "low_confidence"]}, format="json"
    )
    assert only_chain.json()["version"] == helper.version
    assert Agent.objects.get(pk=helper.pk).revisions.count() == 1
    changed = api.patch("/api/v1/agents/helper/", {"fallback_chain": ["retry"]}, format="json")
    assert changed.json()["version"] == helper.version + 1


def test_the_service_keeps_the_stored_agent_when_nothing_changes(helper):
    version = helper.version
    same = agent_save(agent=helper, data={"max_steps": helper.max_steps, "tags": helper.tags})
    assert same.version == version
    moved = agent_save(agent=helper, data={"max_steps": helper.max_steps + 1})
    assert moved.version == version + 1
