"""Routing in admin: rules refused at save when they cannot work, the test box, revisions."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.models import Agent
from delegation.routing.models import RoutingPolicy, RoutingPolicyRevision, RoutingStat
from delegation.routing.seeds import routing_seed
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


def policy_form(name: str = "p", **rule: str) -> dict[str, str]:
    """A POST body for the policy add page with one inline rule."""
    data = {
        "name": name,
        "description": "",
        "default_mode": "CHAT",
        "chat_top_k": "3",
        "router_enabled": "on",
        "router_provider": "",
        "router_model": "",
        "router_timeout": "5",
        "learning": "off",
        "learning_threshold": "50",
        "learning_min_turns": "5",
        "rules-TOTAL_FORMS": "1",
        "rules-INITIAL_FORMS": "0",
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
        "rules-0-kind": "intent",
        "rules-0-order": "0",
        "rules-0-enabled": "on",
        "rules-0-name": "r",
        "rules-0-mode": "STRICT",
    }
    data.update({f"rules-0-{key}": value for key, value in rule.items()})
    return data


def test_an_invalid_pattern_is_refused_with_a_clear_error(admin_client):
    response = admin_client.post(
        "/admin/routing/routingpolicy/add/", policy_form(pattern="([unclosed")
    )
    assert response.status_code == 200
    assert "Not a valid regular expression" in response.content.decode()
    assert not RoutingPolicy.objects.exists()


def test_a_rule_that_matches_nothing_is_refused(admin_client):
    response = admin_client.post("/admin/routing/routingpolicy/add/", policy_form())
    assert "as it is, it matches nothing" in response.content.decode()
    assert not RoutingPolicy.objects.exists()


def test_a_valid_policy_is_saved_with_a_revision(admin_client):
    response = admin_client.post(
        "/admin/routing/routingpolicy/add/", policy_form(keywords="strict, 嚴格")
    )
    assert response.status_code == 302
    policy = RoutingPolicy.objects.get()
    assert policy.version == 1 and policy.rules.get().keywords == "strict, 嚴格"
    assert RoutingPolicyRevision.objects.get().snapshot["rules"][0]["name"] == "r"


def test_the_test_box_shows_the_decision_and_the_rule(admin_client):
    make_agent("hr", display_name="HR", tags=["hr"])
    entry = make_agent("assistant", is_entry=True)
    entry.allowed_subagents.set(Agent.objects.filter(name="hr"))
    policy = routing_seed(name="departments", entry_agents=[entry])
    url = f"/admin/routing/routingpolicy/{policy.pk}/test/"
    page = admin_client.post(url, {"message": "人資的特休規定是什麼？"}).content.decode()
    assert "<strong>CHAT</strong>" in page and ">hr<" in page
    assert "Rule “hr” matched: 人資, 特休" in page
    forced = admin_client.post(url, {"message": "hello", "force_strict": "on"}).content.decode()
    assert "<strong>STRICT</strong>" in forced and "force_strict" in forced


def test_an_entry_agent_belongs_to_one_policy(admin_client):
    entry = make_agent("assistant", is_entry=True)
    routing_seed(name="departments", entry_agents=[entry])
    data = policy_form("second", keywords="x")
    data["entry_agents"] = [str(entry.pk)]
    response = admin_client.post("/admin/routing/routingpolicy/add/", data)
    assert "Already routed by another policy: assistant" in response.content.decode()


def test_restoring_a_revision_brings_back_the_rules(admin_client):
    policy = routing_seed(name="site-assistant")
    first = policy.revisions.get()
    policy.rules.all().delete()
    admin_client.post(
        "/admin/routing/routingpolicyrevision/",
        {"action": "restore", "_selected_action": [first.pk]},
    )
    assert policy.rules.count() == len(first.snapshot["rules"]) and policy.rules.count() > 0


def test_the_run_page_shows_the_turns_routing(admin_client, admin_user):
    import uuid

    from chat.models import ChatSession
    from delegation.models import Run
    from delegation.runs.create import run_create

    agent = make_agent("solo")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=admin_user, agent=agent)
    run = run_create(agent=agent, user=admin_user, session=session, task="t", transcript=[])
    Run.objects.filter(pk=run.pk).update(
        routing={
            "mode": "STRICT",
            "policy": "departments",
            "matched_rule": "legal",
            "matched_keywords": ["合約"],
            "reason": "Legal needs sources.",
            "target": "legal",
            "fallback_used": False,
            "router_latency_ms": None,
            "skipped": [],
        }
    )
    page = admin_client.get(f"/admin/delegation/run/{run.pk}/change/").content.decode()
    assert "Routing of this turn (departments)" in page and "Legal needs sources." in page


def test_an_agents_knowledge_bases_show_in_admin_and_rest(admin_client):
    from agents.knowledge.services import knowledge_base_create

    agent = make_agent("finance")
    knowledge_base_create(name="finance-kb", display_name="Finance KB", agents=[agent])
    page = admin_client.get(f"/admin/agents/agent/{agent.pk}/change/").content.decode()
    assert "Finance KB</a> (kb_search and kb_documents are offered)" in page
    assert admin_client.get("/api/v1/agents/finance/").json()["knowledge_bases"] == ["finance-kb"]


def test_the_test_box_shows_the_intent_and_the_figures_learning_used(admin_client):
    make_agent("hr", display_name="HR", tags=["hr"])
    entry = make_agent("assistant", is_entry=True)
    entry.allowed_subagents.set(Agent.objects.filter(name="hr"))
    policy = routing_seed(name="departments", entry_agents=[entry])
    url = f"/admin/routing/routingpolicy/{policy.pk}/test/"
    plain = admin_client.post(url, {"message": "人资的特休规定是什么？"}).content.decode()
    assert "routing-figures" not in plain  # learning off: no figures read
    RoutingStat.objects.create(
        entry="assistant",
        expert="hr",
        intent="hr",
        day=timezone.now().date(),
        delegations=12,
        succeeded=12,
        validation_passed=3,
        validation_failed=9,
    )
    policy.learning = "advisory"
    policy.save()
    page = admin_client.post(url, {"message": "人资的特休规定是什么？"}).content.decode()
    assert "hr: 25 % good on “hr” (12 turns)" in page and "below the threshold" in page
