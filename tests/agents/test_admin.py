"""The agent admin as an admin uses it: tool checkboxes, validation, versions, diff and restore."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.utils.html import escape

from agents.models import Agent, AgentRevision
from agents.registry import all_tools
from agents.services import agent_revision_record, agent_snapshot
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/agents/agent/add/"


def change_url(agent: Agent) -> str:
    return f"/admin/agents/agent/{agent.pk}/change/"


def revisions_url(agent: Agent) -> str:
    return f"/admin/agents/agent/{agent.pk}/revisions/"


def restore_url(agent: Agent, version: int) -> str:
    return f"/admin/agents/agent/{agent.pk}/revisions/{version}/restore/"


def form_data(**values: Any) -> dict[str, Any]:
    """Every field of the agent change form, as the browser posts it (unchecked boxes omitted)."""
    fields: dict[str, Any] = {
        "name": "helper",
        "display_name": "Helper",
        "description": "Answers questions.",
        "tags": "alpha, beta",
        "system_prompt": "Be helpful.",
        "provider": "offline",
        "model": "",
        "base_url": "",
        "api_key_env": "",
        "temperature": 0.5,
        "max_tokens": 500,
        "tool_keys": ["calculate"],
        "allowed_subagents": [],
        "max_depth": 2,
        "max_steps": 8,
        "enabled": True,
        "delegatable": True,
        "is_entry": False,
        "access_group": None,
        "access_permission": "",
    }
    fields.update(values)
    data: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, bool):
            if value:
                data[key] = "on"
        elif value is None:
            data[key] = ""
        elif isinstance(value, list):
            data[key] = [str(v) for v in value]
        else:
            data[key] = str(value)
    return data


def agent_data(agent: Agent, **changes: Any) -> dict[str, Any]:
    """The change form of `agent` as it renders, with `changes` applied."""
    values: dict[str, Any] = {
        "name": agent.name,
        "display_name": agent.display_name,
        "description": agent.description,
        "tags": ", ".join(agent.tags),
        "system_prompt": agent.system_prompt,
        "provider": agent.provider,
        "model": agent.model,
        "base_url": agent.base_url,
        "api_key_env": agent.api_key_env,
        "temperature": agent.temperature,
        "max_tokens": agent.max_tokens,
        "tool_keys": list(agent.tool_keys),
        "allowed_subagents": [a.pk for a in agent.allowed_subagents.all()],
        "max_depth": agent.max_depth,
        "max_steps": agent.max_steps,
        "enabled": agent.enabled,
        "delegatable": agent.delegatable,
        "is_entry": agent.is_entry,
        "access_group": agent.access_group_id,
        "access_permission": agent.access_permission,
    }
    values.update(changes)
    return form_data(**values)


def form_errors(response: Any) -> dict[str, list[str]]:
    """The change form's errors by field ("__all__" for the rest)."""
    assert response.status_code == 200, "an invalid form re-renders the page"
    return {field: list(errs) for field, errs in response.context["adminform"].form.errors.items()}


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def helper(db) -> Agent:
    return make_agent(
        "helper",
        display_name="Helper",
        description="Answers questions.",
        tags=["alpha"],
        system_prompt="Be helpful.",
        temperature=0.5,
        max_tokens=500,
        tool_keys=["calculate"],
    )


def test_add_page_offers_every_registry_tool_as_a_checkbox_with_its_description(admin_client):
    response = admin_client.get(ADD_URL)
    assert response.status_code == 200
    html = response.content.decode()
    tools = all_tools()
    assert tools, "the built-in tools are registered"
    for tool in tools:
        assert f'type="checkbox" name="tool_keys" value="{tool.key}"' in html
        assert escape(tool.description) in html


def test_creating_an_agent_stores_tags_tools_and_first_revision(admin_client, admin_user):
    math = make_agent("math")
    response = admin_client.post(
        ADD_URL,
        form_data(
            tags="alpha, 财务 , beta, alpha",
            tool_keys=["calculate", "current_time"],
            allowed_subagents=[math.pk],
        ),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get(name="helper")
    assert agent.tags == ["alpha", "财务", "beta"]
    assert sorted(agent.tool_keys) == ["calculate", "current_time"]
    assert list(agent.allowed_subagents.all()) == [math]
    assert agent.version == 1
    revision = AgentRevision.objects.get(agent=agent)
    assert revision.version == 1 and revision.created_by == admin_user
    assert revision.snapshot["allowed_subagents"] == ["math"]
    assert revision.snapshot["tags"] == ["alpha", "财务", "beta"]


def test_editing_bumps_the_version_and_stores_the_new_values(admin_client, helper):
    response = admin_client.post(
        change_url(helper),
        agent_data(
            helper,
            system_prompt="Be brief.",
            tags="alpha, gamma",
            tool_keys=["current_time"],
        ),
    )
    assert response.status_code == 302
    helper.refresh_from_db()
    assert helper.version == 2
    assert helper.system_prompt == "Be brief." and helper.tags == ["alpha", "gamma"]
    latest = helper.revisions.get(version=2)
    assert latest.snapshot["system_prompt"] == "Be brief."
    assert latest.snapshot["tool_keys"] == ["current_time"]
    assert latest.snapshot["tags"] == ["alpha", "gamma"]
    assert "system_prompt" in latest.comment
    assert helper.revisions.get(version=1).snapshot["system_prompt"] == "Be helpful."


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"tool_keys": ["calculate", "rm_rf"]}, "tool_keys", "rm_rf is not one of the available"),
        ({"max_steps": 0}, "max_steps", "greater than or equal to 1"),
        ({"max_depth": 0}, "max_depth", "greater than or equal to 1"),
        ({"temperature": 3}, "temperature", "less than or equal to 2"),
        ({"max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
        ({"provider": "openai", "model": ""}, "model", "Name a model"),
        ({"access_permission": "chat.fly_to_moon"}, "access_permission", "No permission"),
        ({"is_entry": True, "enabled": False}, "enabled", "entry agent must be enabled"),
        ({"api_key_env": "my key!"}, "api_key_env", "An environment variable name"),
        ({"base_url": "not a url at all"}, "base_url", "Enter a valid URL"),
    ],
)
def test_invalid_edit_is_refused_with_a_message_and_changes_nothing(
    admin_client, helper, settings, changes, field, message
):
    settings.OPENAI_MODEL = ""
    response = admin_client.post(change_url(helper), agent_data(helper, **changes))
    errors = form_errors(response)
    assert any(message in text for text in errors.get(field, [])), errors
    assert escape(message) in response.content.decode()
    stored = Agent.objects.get(pk=helper.pk)
    assert agent_snapshot(agent=stored) == agent_snapshot(agent=helper)
    assert stored.version == 1 and helper.revisions.count() == 1


def test_invalid_add_creates_no_agent(admin_client):
    response = admin_client.post(ADD_URL, form_data(tool_keys=["rm_rf"]))
    assert "tool_keys" in form_errors(response)
    assert not Agent.objects.exists() and not AgentRevision.objects.exists()


def test_openai_without_a_model_is_fine_when_openai_model_is_set(admin_client, helper, settings):
    settings.OPENAI_MODEL = "gpt-test"
    response = admin_client.post(change_url(helper), agent_data(helper, provider="openai"))
    assert response.status_code == 302
    helper.refresh_from_db()
    assert helper.provider == "openai" and helper.version == 2


def test_an_agent_cannot_list_itself_as_a_subagent(admin_client, helper):
    other = make_agent("other")
    response = admin_client.post(
        change_url(helper), agent_data(helper, allowed_subagents=[other.pk, helper.pk])
    )
    errors = form_errors(response)
    assert any(
        f"{helper.pk} is not one of the available" in e for e in errors.get("allowed_subagents", [])
    ), errors
    assert not helper.allowed_subagents.exists()
    assert Agent.objects.get(pk=helper.pk).version == 1


def test_a_permission_that_exists_is_accepted(admin_client, helper):
    response = admin_client.post(
        change_url(helper), agent_data(helper, access_permission="agents.view_agent")
    )
    assert response.status_code == 302
    assert Agent.objects.get(pk=helper.pk).access_permission == "agents.view_agent"


def test_marking_a_second_entry_agent_clears_the_first(admin_client, helper):
    first = make_agent("first", is_entry=True)
    response = admin_client.post(change_url(helper), agent_data(helper, is_entry=True))
    assert response.status_code == 302, form_errors(response)
    assert list(Agent.objects.filter(is_entry=True)) == [helper]
    first.refresh_from_db()
    assert not first.is_entry

    response = admin_client.post(ADD_URL, form_data(name="newcomer", is_entry=True))
    assert response.status_code == 302, form_errors(response)
    assert list(Agent.objects.filter(is_entry=True).values_list("name", flat=True)) == ["newcomer"]


def test_revisions_page_shows_a_diff_with_the_changed_value(admin_client, helper):
    admin_client.post(change_url(helper), agent_data(helper, system_prompt="Answer in haiku."))
    response = admin_client.get(revisions_url(helper))
    assert response.status_code == 200
    html = response.content.decode()
    assert escape('-  "system_prompt": "Be helpful.",') in html
    assert escape('+  "system_prompt": "Answer in haiku.",') in html
    assert "Restore version 1" in html
    assert "Restore version 2" not in html, "the current version is not offered for restore"


def test_restore_brings_back_fields_and_subagents_as_a_new_revision(admin_client, helper):
    math, clock = make_agent("math"), make_agent("clock")
    group = Group.objects.create(name="finance")
    admin_client.post(change_url(helper), agent_data(helper, allowed_subagents=[math.pk]))
    admin_client.post(
        change_url(helper),
        agent_data(
            Agent.objects.get(pk=helper.pk),
            system_prompt="Changed.",
            tags="other",
            tool_keys=["current_time"],
            allowed_subagents=[clock.pk],
            max_steps=3,
            temperature=1.5,
            access_group=group.pk,
        ),
    )
    helper.refresh_from_db()
    assert helper.version == 3 and helper.access_group == group

    response = admin_client.post(restore_url(helper, 2))
    assert response.status_code == 302
    helper.refresh_from_db()
    assert helper.system_prompt == "Be helpful." and helper.tags == ["alpha"]
    assert helper.tool_keys == ["calculate"] and helper.max_steps == 8
    assert helper.temperature == 0.5 and helper.access_group is None
    assert list(helper.allowed_subagents.all()) == [math]
    assert helper.version == 4
    newest = helper.revisions.get(version=4)
    assert newest.comment == "Restored from version 2."
    assert newest.snapshot == helper.revisions.get(version=2).snapshot
    page = admin_client.get(change_url(helper)).content.decode()
    assert "Restored version 2 as version 4" in page


def test_get_on_restore_changes_nothing(admin_client, helper):
    admin_client.post(change_url(helper), agent_data(helper, system_prompt="Changed."))
    response = admin_client.get(restore_url(helper, 1))
    assert response.status_code == 302 and response["Location"] == revisions_url(helper)
    helper.refresh_from_db()
    assert helper.system_prompt == "Changed." and helper.version == 2
    assert helper.revisions.count() == 2


def test_staff_without_change_permission_cannot_restore(client, helper):
    viewer = make_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_agent"))
    helper.system_prompt = "Changed."
    helper.save()
    agent_revision_record(agent=helper, comment="edit")
    client.force_login(viewer)

    page = client.get(revisions_url(helper))
    assert page.status_code == 200
    assert "Restore version" not in page.content.decode()
    response = client.post(restore_url(helper, 1))
    assert response.status_code == 302
    helper.refresh_from_db()
    assert helper.system_prompt == "Changed." and helper.version == 2
    assert helper.revisions.count() == 2


def test_switching_the_entry_agent_records_a_revision_of_the_previous_one(admin_client, helper):
    first = make_agent("first", is_entry=True)
    response = admin_client.post(change_url(helper), agent_data(helper, is_entry=True))
    assert response.status_code == 302, form_errors(response)
    first.refresh_from_db()
    assert first.version == 2 and first.revisions.first().snapshot["is_entry"] is False
    assert first.revisions.first().comment == "Entry agent is now helper."


def test_an_invalid_entry_switch_leaves_the_flag_where_it_was(admin_client, helper):
    make_agent("first", is_entry=True)
    response = admin_client.post(change_url(helper), agent_data(helper, is_entry=True, max_steps=0))
    assert "max_steps" in form_errors(response)
    assert list(Agent.objects.filter(is_entry=True).values_list("name", flat=True)) == ["first"]


@pytest.fixture
def stale_helper(helper) -> Agent:
    """`helper` still listing `gone_tool`, a tool the code no longer registers."""
    Agent.objects.filter(pk=helper.pk).update(tool_keys=["calculate", "gone_tool"])
    return Agent.objects.get(pk=helper.pk)


def test_stale_tool_keys_show_as_a_warning_and_unticked_boxes(admin_client, stale_helper):
    html = admin_client.get(change_url(stale_helper)).content.decode()
    assert "This agent lists tools removed from code: gone_tool." in html
    assert 'type="checkbox" name="tool_keys" value="gone_tool"' in html
    assert '<code class="tool-row-key">gone_tool</code>' not in html  # titled by its key
    assert re.search(r"gone_tool</span>\s*<span class=\"tool-badge\">removed from code", html)
    assert 'value="gone_tool" id="id_tool_keys_' in html  # rendered without `checked`
    assert re.search(r'value="calculate" id="id_tool_keys_\d+" checked', html.replace("\n", ""))


def test_saving_with_the_stale_box_unticked_removes_the_key(admin_client, stale_helper):
    data = agent_data(stale_helper, system_prompt="Changed.", tool_keys=["calculate"])
    response = admin_client.post(change_url(stale_helper), data)
    assert response.status_code == 302, form_errors(response)
    stale_helper.refresh_from_db()
    assert stale_helper.tool_keys == ["calculate"] and stale_helper.system_prompt == "Changed."


def test_a_ticked_stale_key_may_stay_but_a_new_unknown_one_may_not(admin_client, stale_helper):
    kept = agent_data(stale_helper, max_steps=5, tool_keys=["calculate", "gone_tool"])
    response = admin_client.post(change_url(stale_helper), kept)
    assert response.status_code == 302, form_errors(response)
    assert Agent.objects.get(pk=stale_helper.pk).tool_keys == ["calculate", "gone_tool"]

    added = agent_data(stale_helper, tool_keys=["calculate", "gone_tool", "rm_rf"])
    errors = form_errors(admin_client.post(change_url(stale_helper), added))
    assert any("rm_rf is not one of the available" in e for e in errors["tool_keys"]), errors


def test_restoring_a_revision_that_no_longer_validates_says_why(admin_client, helper):
    AgentRevision.objects.filter(agent=helper, version=1).update(
        snapshot={**agent_snapshot(agent=helper), "tool_keys": ["gone_tool"]}
    )
    admin_client.post(change_url(helper), agent_data(helper, system_prompt="Changed."))
    response = admin_client.post(restore_url(helper, 1), follow=True)
    assert "Version 1 cannot be restored: tool_keys: Unknown tool key(s): gone_tool" in (
        response.content.decode()
    )
    helper.refresh_from_db()
    assert helper.system_prompt == "Changed." and helper.version == 2
