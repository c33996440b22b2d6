"""The admin home grouped by task with the most used pages on top, only what the staff member
may see; every admin time in the staff member's own zone, which the header names."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import pytest
from django.test import Client

from chat.models import ChatPreference, ChatSession
from delegation.models import Run
from delegation.runs.create import run_create
from tests.factories import grant, make_agent, make_user, model_perms

pytestmark = pytest.mark.django_db


def groups(page: str) -> list[str]:
    return re.findall(r'class="module admin-group" id="group-([a-z]+)"', page)


def shortcuts(page: str) -> list[str]:
    return re.findall(r'class="admin-shortcut" id="shortcut-([a-z_]+)" href="([^"]+)"', page)


def test_the_home_groups_the_admin_by_task_with_the_main_pages_first(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert groups(page)[:6] == ["agents", "knowledge", "people", "usage", "quality", "runs"]
    assert shortcuts(page) == [
        ("inbox", "/inbox/"),
        ("usage_dashboard", "/admin/usage/usagerecord/dashboard/"),
        ("agents_agent_map", "/admin/agents/agent/map/"),
        ("delegation_run_changelist", "/admin/delegation/run/"),
    ]
    agents = page.split('id="group-agents"', 1)[1].split("</table>", 1)[0]
    for model in ("/admin/agents/agent/", "/admin/mcp/mcpserver/", "/admin/routing/routingpolicy/"):
        assert f'href="{model}"' in agents
    people = page.split('id="group-people"', 1)[1].split("</table>", 1)[0]
    for model in ("/admin/auth/user/", "/admin/auth/group/", "/admin/humans/inboxitem/"):
        assert f'href="{model}"' in people
    assert page.index("admin-shortcuts") < page.index('id="group-agents"')


def test_a_staff_member_sees_only_what_they_may(db):
    clerk = make_user("clerk", is_staff=True)
    grant(clerk, *model_perms("delegation.run", actions="view"))
    client = Client()
    client.force_login(clerk)
    page = client.get("/admin/").content.decode()
    assert groups(page) == ["runs"]
    assert [key for key, _ in shortcuts(page)] == ["inbox", "delegation_run_changelist"]
    assert "/admin/usage/" not in page and "/admin/agents/" not in page


def test_the_side_navigation_is_grouped_as_the_home_is_and_only_what_they_may(db):
    clerk = make_user("clerk", is_staff=True)
    grant(clerk, *model_perms("delegation.run", "agents.agent", actions="view"))
    client = Client()
    client.force_login(clerk)
    page = client.get("/admin/delegation/run/").content.decode()
    nav = page.split('id="nav-sidebar"', 1)[1].split("</nav>", 1)[0]
    assert re.findall(r'class="module nav-group-([a-z]+)"', nav) == ["agents", "runs"]
    assert 'href="/admin/delegation/run/" aria-current="page"' in nav
    assert "/admin/usage/" not in nav


def test_admin_times_are_in_the_staff_members_zone_which_the_header_names(
    admin_client, admin_user, user
):
    agent = make_agent("boss")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    run = run_create(agent=agent, user=user, session=session, task="q", transcript=[])
    Run.objects.filter(pk=run.pk).update(created_at=datetime(2026, 1, 5, 1, 30, tzinfo=UTC))
    page = admin_client.get("/admin/delegation/run/").content.decode()
    assert 'id="admin-zone">Times in UTC<' in page and "1:30 a.m." in page

    ChatPreference.objects.create(user=admin_user, timezone="Asia/Taipei")
    page = admin_client.get("/admin/delegation/run/").content.decode()
    assert 'id="admin-zone">Times in Asia/Taipei<' in page
    assert "9:30 a.m." in page and "1:30 a.m." not in page


def test_an_unknown_zone_falls_back_to_the_sites(admin_client, admin_user):
    ChatPreference.objects.create(user=admin_user, timezone="Mars/Olympus")
    page = admin_client.get("/admin/").content.decode()
    assert 'id="admin-zone">Times in UTC<' in page


def test_pages_outside_the_admin_keep_the_sites_zone(admin_client, admin_user):
    ChatPreference.objects.create(user=admin_user, timezone="Asia/Taipei")
    assert "Times in" not in admin_client.get("/accounts/login/").content.decode()
