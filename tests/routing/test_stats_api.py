"""Routing statistics over REST (staff only, filtered, bad filters refused with a message) and
on their admin page (a table with rates and counts, a chart per expert)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delegation.routing.models import RoutingStat
from tests.api.conftest import token_client
from tests.factories import grant, make_user

pytestmark = pytest.mark.django_db

URL = "/api/v1/routing/stats/"


def ops():
    """A staff member who may view routing statistics (as the admin's page asks)."""
    return grant(make_user("ops", is_staff=True), "routing.view_routingstat")


@pytest.fixture
def stats(db) -> None:
    today = timezone.now().date()
    rows = [
        ("boss", "hr", "hr", today, 10, 9, 8, 2, 1, 1),
        ("boss", "hr", "hr", today - timezone.timedelta(days=1), 4, 4, 4, 0, 0, 0),
        ("boss", "finance", "finance", today, 5, 5, 1, 4, 0, 2),
        ("site", "hr", "none", today, 2, 2, 0, 0, 0, 0),
        ("boss", "hr", "hr", today - timezone.timedelta(days=60), 50, 0, 0, 50, 0, 0),
    ]
    for entry, expert, intent, day, n, ok, passed, failed, up, down in rows:
        RoutingStat.objects.create(
            entry=entry,
            expert=expert,
            intent=intent,
            day=day,
            delegations=n,
            succeeded=ok,
            validation_passed=passed,
            validation_failed=failed,
            rated_up=up,
            rated_down=down,
        )


def test_staff_see_the_window_summed_per_entry_expert_and_intent(stats):
    staff = token_client(ops())
    body = staff.get(URL).json()
    assert body["days"] == 30  # the 60-day-old row is outside the window
    hr = body["rows"][0]
    assert (hr["entry"], hr["expert"], hr["intent"], hr["delegations"]) == ("boss", "hr", "hr", 14)
    assert hr["validation_rate"] == 85.7 and hr["good_rate"] == 81.2  # (12+1) / (14+2)
    assert [r["expert"] for r in body["rows"]] == ["hr", "finance", "hr"]


def test_filters_narrow_the_rows(stats):
    staff = token_client(ops())
    assert [r["entry"] for r in staff.get(URL, {"expert": "hr"}).json()["rows"]] == ["boss", "site"]
    only = staff.get(URL, {"entry": "boss", "intent": "finance"}).json()["rows"]
    assert [(r["expert"], r["rated_down"]) for r in only] == [("finance", 2)]
    assert staff.get(URL, {"days": 90}).json()["rows"][0]["delegations"] == 64


@pytest.mark.parametrize(
    ("query", "field"),
    [({"days": "0"}, "days"), ({"days": "soon"}, "days"), ({"entry": "a b"}, "entry")],
)
def test_a_bad_filter_is_refused_with_a_message(stats, query, field):
    staff = token_client(ops())
    response = staff.get(URL, query)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] and error["message"] and field in error["details"]


@pytest.mark.parametrize("is_staff", [False, True])
def test_others_are_refused_with_a_clear_message(stats, is_staff):
    # An end user, and a staff account without the permission (an inbox approver, say).
    response = token_client(make_user("someone", is_staff=is_staff)).get(URL)
    assert response.status_code == 403
    assert "Routing statistics are for staff members" in response.json()["error"]["message"]


def test_the_admin_page_shows_the_table_and_a_chart_per_expert(stats, admin_client):
    page = admin_client.get("/admin/routing/routingstat/").content.decode()
    assert "Routing statistics" in page and 'id="routing-stats-table"' in page
    assert "85.7 %" in page and page.count('class="routing-chart"') == 2
    filtered = admin_client.get("/admin/routing/routingstat/", {"expert": "finance"})
    assert filtered.content.decode().count('class="routing-chart"') == 1
    assert "20.0 %" in filtered.content.decode()  # finance: 1 of 5 validated
