"""Who may use which agent, which agent a user talks to, and how revisions are compared."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Group, Permission

from agents.models import Agent
from agents.selectors import (
    agent_entry_for,
    agent_usable_by,
    agents_usable_by,
    revision_diff,
    with_subagent_names,
)
from agents.services import agent_revision_record, agent_snapshot
from config.errors import AppError
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db

PERMISSION = "chat.view_chatsession"


@pytest.fixture
def finance() -> Group:
    return Group.objects.create(name="finance")


def with_permission(user, dotted: str = PERMISSION):
    """`user` granted `dotted`, fetched again so Django's permission cache is fresh."""
    app_label, codename = dotted.split(".")
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label=app_label, codename=codename)
    )
    return get_user_model().objects.get(pk=user.pk)


def test_agent_without_a_rule_is_usable_by_any_active_signed_in_user(user):
    assert agent_usable_by(agent=make_agent("open"), user=user)


def test_inactive_and_anonymous_users_may_use_no_agent(user):
    agent = make_agent("open")
    user.is_active = False
    assert not agent_usable_by(agent=agent, user=user)
    assert not agent_usable_by(agent=agent, user=AnonymousUser())
    assert not agent_usable_by(agent=agent, user=None)


def test_group_rule_admits_only_members(user, other_user, finance):
    agent = make_agent("ledger", access_group=finance)
    user.groups.add(finance)
    assert agent_usable_by(agent=agent, user=user)
    assert not agent_usable_by(agent=agent, user=other_user)


def test_permission_rule_admits_only_holders(user, other_user):
    agent = make_agent("ledger", access_permission=PERMISSION)
    assert agent_usable_by(agent=agent, user=with_permission(user))
    assert not agent_usable_by(agent=agent, user=other_user)


def test_group_and_permission_are_both_needed(user, finance):
    agent = make_agent("ledger", access_group=finance, access_permission=PERMISSION)
    only_permission = with_permission(user)
    assert not agent_usable_by(agent=agent, user=only_permission)
    only_group = make_user("bob")
    only_group.groups.add(finance)
    assert not agent_usable_by(agent=agent, user=only_group)
    only_permission.groups.add(finance)
    assert agent_usable_by(agent=agent, user=only_permission)


def test_superuser_passes_every_rule_unless_inactive(admin_user, finance):
    agent = make_agent("ledger", access_group=finance, access_permission=PERMISSION)
    assert agent_usable_by(agent=agent, user=admin_user)
    admin_user.is_active = False
    assert not agent_usable_by(agent=agent, user=admin_user)


def test_no_entry_agent_is_a_clear_error(user):
    make_agent("helper")
    make_agent("retired", is_entry=True, enabled=False)
    with pytest.raises(AppError) as caught:
        agent_entry_for(user=user)
    assert caught.value.code == "no_entry_agent"


def test_entry_agent_the_user_may_not_use_is_forbidden(user, finance):
    make_agent("assistant", display_name="Assistant", is_entry=True, access_group=finance)
    with pytest.raises(AppError) as caught:
        agent_entry_for(user=user)
    assert caught.value.code == "agent_forbidden" and caught.value.status == 403
    assert "Assistant" in caught.value.message
    user.groups.add(finance)
    assert agent_entry_for(user=user).name == "assistant"


def test_agents_usable_by_lists_enabled_permitted_agents_only(user, finance):
    make_agent("open")
    make_agent("disabled", enabled=False)
    make_agent("grouped", access_group=finance)
    make_agent("guarded", access_permission=PERMISSION)
    assert [a.name for a in agents_usable_by(user=user)] == ["open"]
    user.groups.add(finance)
    assert [a.name for a in agents_usable_by(user=with_permission(user))] == [
        "grouped",
        "guarded",
        "open",
    ]


def test_revision_diff_shows_what_changed_between_two_revisions():
    agent = make_agent("helper", system_prompt="Be helpful.", tool_keys=["calculate"])
    first = agent.revisions.get()
    Agent.objects.filter(pk=agent.pk).update(system_prompt="Be brief.")
    agent.refresh_from_db()
    second = agent_revision_record(agent=agent, comment="edit")

    diff = revision_diff(revision=second, against=first)
    lines = diff.splitlines()
    assert lines[:2] == ["--- v1", "+++ v2"]
    assert '-  "system_prompt": "Be helpful.",' in lines
    assert '+  "system_prompt": "Be brief.",' in lines
    changed = [ln for ln in lines[2:] if ln[:1] in "+-"]
    assert len(changed) == 2, "only the changed field is marked"
    assert revision_diff(revision=second, against=second) == ""


def test_revision_diff_of_the_first_revision_adds_everything():
    first = make_agent("helper", tool_keys=["calculate"]).revisions.get()
    lines = revision_diff(revision=first, against=None).splitlines()
    assert lines[:2] == ["--- (none)", "+++ v1"]
    assert '+  "name": "helper",' in lines
    assert not [ln for ln in lines[2:] if ln.startswith("-")]


def test_an_agent_loaded_with_its_experts_names_snapshots_as_one_read_afterwards(
    django_assert_num_queries,
):
    """`with_subagent_names` brings the names in the agent's own statement (none for a leaf):
    the snapshot a run pins is the same, without its own query."""
    hr, finance = make_agent("hr"), make_agent("finance")
    make_agent("lead", subagents=[hr, finance])
    loaded = {a.name: a for a in with_subagent_names(Agent.objects.all())}
    assert sorted(loaded["lead"].subagent_names) == ["finance", "hr"]
    assert loaded["hr"].subagent_names is None
    for name, agent in loaded.items():
        with django_assert_num_queries(0):
            snapshot = agent_snapshot(agent=agent)
        assert snapshot == agent_snapshot(agent=Agent.objects.get(name=name))
    assert agent_snapshot(agent=loaded["lead"])["allowed_subagents"] == ["finance", "hr"]
