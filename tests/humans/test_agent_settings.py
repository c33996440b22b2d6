"""The quality and human-wait settings of an agent, in admin and the API: saved, versioned,
pinned on runs, and refused with the field when wrong."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from agents.models import Agent
from tests.agents.test_admin import agent_data
from tests.factories import make_agent, make_user
from tests.humans.helpers import client

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(db) -> Client:
    browser = Client()
    browser.force_login(make_user("root", is_staff=True, is_superuser=True))
    return browser


def test_the_admin_form_saves_the_settings_and_the_revision_keeps_them(admin):
    Group.objects.create(name="Finance")
    helper = make_agent("helper", tool_keys=["create_task", "calculate"])
    page = admin.get(f"/admin/agents/agent/{helper.pk}/change/").content.decode()
    assert 'name="approval_tool_keys" value="create_task"' in page
    assert 'value="retry, next_expert, low_confidence"' in page  # the chain as text
    data = agent_data(helper)
    data.update(
        validate_answers="model",
        validator_model="fast-judge",
        answer_min_chars="10",
        answer_max_chars="2000",
        fallback_chain="next_expert, unanswered",
        require_approval="on",
        approval_tool_keys=["create_task"],
        human_sla_seconds="600",
        human_group="Finance",
    )
    response = admin.post(f"/admin/agents/agent/{helper.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    helper.refresh_from_db()
    assert (helper.validate_answers, helper.validator_model) == ("model", "fast-judge")
    assert (helper.answer_min_chars, helper.answer_max_chars) == (10, 2000)
    assert helper.fallback_chain == ["next_expert", "unanswered"]
    assert helper.require_approval and helper.approval_tool_keys == ["create_task"]
    assert (helper.human_sla_seconds, helper.human_group) == (600, "Finance")
    snapshot = helper.revisions.first().snapshot
    assert snapshot["fallback_chain"] == ["next_expert", "unanswered"]
    assert snapshot["human_group"] == "Finance"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"fallback_chain": "retry, guess"}, "fallback_chain"),
        ({"fallback_chain": "low_confidence, retry"}, "fallback_chain"),
        ({"fallback_chain": "retry, retry"}, "fallback_chain"),
        ({"human_sla_seconds": "5"}, "human_sla_seconds"),
        ({"validate_answers": "always"}, "validate_answers"),
    ],
)
def test_the_admin_form_refuses_bad_settings_with_the_field(admin, changes, field):
    helper = make_agent("helper")
    data = {**agent_data(helper), **changes}
    response = admin.post(f"/admin/agents/agent/{helper.pk}/change/", data)
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"fallback_chain": ["retry", "ask_mom"]}, "fallback_chain"),
        ({"fallback_chain": "retry"}, "fallback_chain"),
        ({"approval_tool_keys": ["no_such_tool"]}, "approval_tool_keys"),
        ({"human_group": "Nobody"}, "human_group"),
        ({"validate_answers": "sometimes"}, "validate_answers"),
        ({"answer_min_chars": -1}, "answer_min_chars"),
    ],
)
def test_the_api_refuses_bad_settings_with_the_field(body, field):
    make_agent("helper")
    staff = client(make_user("root", is_staff=True, is_superuser=True))
    response = staff.patch("/api/v1/agents/helper/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["details"]


def test_the_api_saves_the_settings_as_a_new_version():
    Group.objects.create(name="Finance")
    make_agent("helper", tool_keys=["create_task"])
    staff = client(make_user("root", is_staff=True, is_superuser=True))
    body = {
        "require_approval": True,
        "approval_tool_keys": ["create_task"],
        "fallback_chain": ["retry"],
        "human_group": "Finance",
    }
    response = staff.patch("/api/v1/agents/helper/", body, format="json")
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in body} == body
    assert Agent.objects.get(name="helper").version == 2
