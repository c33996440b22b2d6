"""Usage in admin: the dashboard (server-drawn SVG, no script), unpriced models flagged, the
ledger and used prices read-only, budgets validated, cost per node in the run tree, the entry
agent's turn max cost."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from agents.models import Agent, AgentRevision
from delegation.models import Run
from delegation.usage.models import Budget, UsageRecord
from tests.api.conftest import token_client
from tests.delegation.conftest import make_team
from tests.factories import grant, make_agent, make_user
from tests.fake_openai import Team, delegate, text
from tests.usage.conftest import make_price, record

pytestmark = pytest.mark.django_db

DASHBOARD = "/admin/usage/usagerecord/dashboard/"
TODAY = timezone.localdate()


@pytest.fixture
def ledger(user, other_user) -> None:
    """Two days, three agents (one unpriced model)."""
    yesterday = TODAY - timedelta(days=1)
    record(user, "boss", yesterday, "0.25", uuid.uuid4())
    record(user, "finance", yesterday, "0.50", uuid.uuid4())
    record(other_user, "boss", TODAY, "1.00", uuid.uuid4())
    record(user, "mystery", TODAY, "0", uuid.uuid4(), model="llama-9", priced=False)


def test_the_dashboard_plots_cost_per_day_stacked_by_agent_without_script(ledger, admin_client):
    response = admin_client.get(DASHBOARD)
    assert response.status_code == 200
    page = response.content.decode()
    start = page.index('<svg id="usage-chart-svg"')
    chart = page[start : page.index("</svg>", start)]
    titles = re.findall(r"<rect class=\"usage-bar\"[^>]*><title>([^<]*)</title>", chart)
    yesterday = (TODAY - timedelta(days=1)).isoformat()
    assert sorted(titles) == sorted(
        [
            f"{yesterday} · boss: US$0.25",
            f"{yesterday} · finance: US$0.50",
            f"{TODAY} · boss: US$1.00",
        ]
    )
    heights = {
        t: float(h) for h, t in re.findall(r'height="([\d.]+)" fill="[^"]+"><title>([^<]*)<', chart)
    }
    assert heights[f"{TODAY} · boss: US$1.00"] == pytest.approx(
        4 * heights[f"{yesterday} · boss: US$0.25"]
    )
    # Every script on the page is a file (the CSP allows no inline script).
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", page))
    assert "script-src 'self'" in response["Content-Security-Policy"]
    for heading in ("Per day", "Per agent", "Per user", "Per session", "Costliest turns"):
        assert heading in page
    assert "<strong>US$1.75</strong>" in page  # the period's total
    assert "Models without a price" in page and "openai/llama-9" in page


def test_the_dashboard_refuses_a_backwards_period_and_shows_the_default(ledger, admin_client):
    response = admin_client.get(DASHBOARD, {"start": "2026-03-02", "end": "2026-03-01"})
    assert response.status_code == 200
    assert "must be on or before" in response.content.decode()


def test_the_dashboard_is_for_staff(ledger, client):
    client.force_login(make_user("plain"))
    assert client.get(DASHBOARD).status_code == 302  # to the admin login


def test_unpriced_calls_are_flagged_in_the_ledger_and_price_list(ledger, admin_client):
    ledger_page = admin_client.get("/admin/usage/usagerecord/").content.decode()
    assert "0 (unknown model)" in ledger_page
    prices = admin_client.get("/admin/usage/modelprice/", follow=True).content.decode()
    assert "without a price" in prices and "openai/llama-9 (1 calls)" in prices
    only_unpriced = admin_client.get("/admin/usage/usagerecord/", {"priced": "no"})
    assert only_unpriced.context["cl"].result_count == 1


def test_the_ledger_is_append_only_in_admin(ledger, admin_client):
    row = UsageRecord.objects.first()
    assert admin_client.get("/admin/usage/usagerecord/add/").status_code == 403
    assert (
        admin_client.post(f"/admin/usage/usagerecord/{row.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    admin_client.post(f"/admin/usage/usagerecord/{row.pk}/change/", {"cost": "0"})
    assert UsageRecord.objects.get(pk=row.pk).cost == row.cost


def test_a_price_that_priced_calls_is_history(admin_client, user):
    used = make_price(model="gpt-x", input="1", output="2")
    unused = make_price(model="gpt-y", input="1", output="2")
    record(user, "boss", TODAY, "0.1", uuid.uuid4(), model="gpt-x", price=used)
    page = admin_client.get(f"/admin/usage/modelprice/{used.pk}/change/").content.decode()
    assert 'name="_save"' not in page  # view only
    assert (
        admin_client.post(f"/admin/usage/modelprice/{used.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    unused_page = admin_client.get(f"/admin/usage/modelprice/{unused.pk}/change/").content.decode()
    assert 'name="_save"' in unused_page


def test_a_budget_must_name_its_owner(admin_client, user):
    agent = make_agent("finance")
    data = {"scope": "user", "period": "day", "user": user.pk, "agent": agent.pk, "max_cost": "5"}
    response = admin_client.post("/admin/usage/budget/add/", data)
    assert "A user budget names a user (and no agent)" in response.content.decode()
    response = admin_client.post("/admin/usage/budget/add/", {**data, "max_cost": "-1"})
    assert "greater than or equal to 0" in response.content.decode()
    admin_client.post("/admin/usage/budget/add/", {**data, "agent": ""})
    assert Budget.objects.get().max_cost == Decimal("5")


@pytest.mark.django_db(transaction=True)
def test_the_run_tree_shows_the_cost_of_every_node(settings, admin_client, user, fake_openai):
    settings.TASKS_RUN_SYNC = True
    make_price(input="1", output="1")
    make_team(boss=["finance"], finance=[])
    Team(fake_openai).script("boss", delegate("finance"), text("done"))
    token_client(user).post(
        f"/api/v1/sessions/{uuid.uuid4()}/messages/", {"text": "hi"}, format="json"
    )
    child = Run.objects.get(depth=1)
    page = admin_client.get(f"/admin/delegation/run/{child.pk}/change/").content.decode()
    assert "cost of the turn: US$0.000054" in page
    cells = re.findall(r"<td>(US\$0\.\d+)</td>", page)
    assert cells == ["US$0.000036", "US$0.000018"]  # boss (two calls), finance (one)
    listing = admin_client.get("/admin/delegation/run/").content.decode()
    assert "US$0.000036 (turn US$0.000054)" in listing and "US$0.000018" in listing


def test_the_entry_agents_turn_max_cost_is_edited_in_admin_and_api(admin_client):
    page = admin_client.get("/admin/agents/agent/add/").content.decode()
    assert 'name="turn_max_cost"' in page
    agent = make_agent("boss", is_entry=True)
    editor = grant(make_user("auditor", is_staff=True), "agents.change_agent")
    staff = token_client(editor)
    changed = staff.patch("/api/v1/agents/boss/", {"turn_max_cost": "0.25"}, format="json")
    assert changed.status_code == 200 and changed.json()["turn_max_cost"] == "0.2500"
    assert AgentRevision.objects.filter(agent=agent).first().snapshot["turn_max_cost"] == "0.2500"
    refused = staff.patch("/api/v1/agents/boss/", {"turn_max_cost": "-1"}, format="json")
    assert refused.status_code == 400 and "turn_max_cost" in refused.json()["error"]["details"]
    assert Agent.objects.get(name="boss").turn_max_cost == Decimal("0.25")
