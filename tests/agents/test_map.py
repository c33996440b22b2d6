"""The delegation map's graph: layers from the entry agent and each warning at its edge."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from agents.map import agent_map, map_build
from agents.models import Agent
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


def build(cap: int = 2):
    agents = Agent.objects.select_related("access_group").prefetch_related("allowed_subagents")
    return map_build(agents=agents, cap=cap)


def test_layers_edges_access_and_tools():
    group = Group.objects.create(name="finance-team")
    sql = make_agent("sql", tags=["db"], tool_keys=["calculate"])
    finance = make_agent("finance", tags=["money"], subagents=[sql], access_group=group)
    make_agent("boss", is_entry=True, subagents=[finance])
    result = build()
    assert result.edges == [("boss", "finance"), ("finance", "sql")]
    assert [result.nodes[n].layer for n in ("boss", "finance", "sql")] == [0, 1, 2]
    assert result.nodes["finance"].access == "group finance-team"
    assert result.nodes["sql"].tools == ["calculate"]
    assert result.warnings == []


def test_cycle_is_warned_on_both_agents():
    a = make_agent("a", tags=["x"])
    b = make_agent("b", tags=["y"], subagents=[a])
    a.allowed_subagents.set([b])
    make_agent("boss", is_entry=True, subagents=[a])
    result = build()
    assert result.cycle_edges == {("a", "b"), ("b", "a")}
    assert "delegation cycle via b" in result.nodes["a"].warnings[0]
    assert "delegation cycle via a" in result.nodes["b"].warnings[0]
    assert not result.nodes["boss"].warnings


def test_agent_nothing_reaches_and_not_delegatable_target():
    hidden = make_agent("hidden", tags=["x"], delegatable=False)
    make_agent("lonely", tags=["x"])
    make_agent("boss", is_entry=True, subagents=[hidden])
    result = build()
    assert result.nodes["lonely"].layer is None
    assert "nothing reaches it" in result.nodes["lonely"].warnings[0]
    assert "nothing reaches it" in result.nodes["hidden"].warnings[0]


def test_depth_above_cap_edge():
    make_agent("boss", is_entry=True, max_depth=3)
    assert not build(cap=3).warnings
    assert "above the global cap DELEGATION_MAX_DEPTH=2" in build(cap=2).warnings[0]


def test_expert_without_description_or_tags():
    bare = make_agent("bare", description="", tags=[])
    half = make_agent("half", tags=[])
    make_agent("boss", is_entry=True, subagents=[bare, half])
    result = build()
    assert result.nodes["bare"].warnings == [
        "expert without description or tags: the router cannot choose it."
    ]
    assert result.nodes["half"].warnings == ["expert without tags: the router cannot choose it."]


def test_no_entry_agent_is_warned(settings):
    settings.DELEGATION_MAX_DEPTH = 2
    make_agent("solo", tags=["x"])
    assert agent_map().warnings[0].startswith("No enabled entry agent")


def test_map_page_draws_every_agent_and_escapes_names(admin_client):
    expert = make_agent("finance", display_name="<b>Money</b>", tags=["money"])
    make_agent("boss", is_entry=True, subagents=[expert], max_depth=5)
    page = admin_client.get("/admin/agents/agent/map/").content.decode()
    svg = page.split('id="delegation-map"', 1)[1].split("</svg>", 1)[0]
    assert 'data-agent="boss"' in svg and 'data-agent="finance"' in svg
    assert "&lt;b&gt;Money&lt;/b&gt;" in svg and "<b>Money" not in page
    assert svg.count("marker-end=") == 1  # the one delegation, as one arrow
    assert "max depth 5 (cap 2)" in svg
    assert "above the global cap" in page.split('id="map-warnings"', 1)[1]
    assert "<script" not in svg


def test_map_is_linked_from_the_changelist(admin_client):
    page = admin_client.get("/admin/agents/agent/").content.decode()
    assert 'href="/admin/agents/agent/map/"' in page


def test_map_needs_staff(client, user):
    client.force_login(user)
    assert "/admin/login/" in client.get("/admin/agents/agent/map/").url


def test_change_form_shows_the_agents_map_warnings(admin_client):
    bare = make_agent("bare", description="", tags=[])
    make_agent("boss", is_entry=True, subagents=[bare])
    page = admin_client.get(f"/admin/agents/agent/{bare.pk}/change/").content.decode()
    box = page.split('id="map-warnings"', 1)[1].split("</ul>", 1)[0]
    assert "expert without description or tags" in box


def test_new_agent_offers_one_click_add_to_entry_experts(admin_client):
    from tests.agents.test_admin import form_data

    boss = make_agent("boss", is_entry=True, tags=["x"])
    response = admin_client.post("/admin/agents/agent/add/", form_data(), follow=True)
    helper = Agent.objects.get(name="helper")
    action = f"/admin/agents/agent/{boss.pk}/add-expert/{helper.pk}/"
    page = response.content.decode()
    assert f'action="{action}"' in page and "Add it to Boss" in page
    assert not boss.allowed_subagents.exists()
    page = admin_client.post(action, follow=True).content.decode()
    assert list(boss.allowed_subagents.all()) == [helper]
    assert "Helper is now one of Boss" in page
    boss.refresh_from_db()
    assert boss.revisions.first().comment == "Admin: added expert helper"


def test_add_expert_refuses_get_and_no_offer_without_entry(admin_client):
    from tests.agents.test_admin import form_data

    response = admin_client.post("/admin/agents/agent/add/", form_data(), follow=True)
    assert "add-expert" not in response.content.decode()
    boss = make_agent("boss", is_entry=True)
    helper = Agent.objects.get(name="helper")
    admin_client.get(f"/admin/agents/agent/{boss.pk}/add-expert/{helper.pk}/")
    assert not boss.allowed_subagents.exists()
