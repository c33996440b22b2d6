"""The cost dashboard and the ledger speak to people: sessions by their titles, costs in their
currency, never raw ids or ten decimal places."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone

from chat.models import ChatSession
from delegation.usage.selectors import usage_report
from tests.factories import make_agent
from tests.usage.conftest import record

pytestmark = pytest.mark.django_db

DASHBOARD = "/admin/usage/usagerecord/dashboard/"
TODAY = timezone.localdate()


@pytest.fixture
def spent(user):
    agent = make_agent("boss")
    named = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent, title="請假規定")
    untitled = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent, title="")
    record(user, "boss", TODAY, "0.0042", named.pk)
    record(user, "boss", TODAY, "1.5", untitled.pk)
    return named, untitled


def test_sessions_show_their_titles_and_costs_their_currency(admin_client, spent):
    named, untitled = spent
    page = admin_client.get(DASHBOARD).content.decode()
    table = page.split("<h2>Per session</h2>", 1)[1].split("</table>", 1)[0]
    assert f'<td title="{named.pk}">請假規定</td>' in table
    assert f"Untitled chat {str(untitled.pk)[:8]}" in table
    assert "<td>US$0.0042</td>" in table and "<td>US$1.50</td>" in table
    assert "0.0042000000" not in page


def test_the_api_keeps_the_session_id_as_its_key(spent):
    named, _ = spent
    [row] = [r for r in usage_report(group_by="session", start=TODAY, end=TODAY) if r.cost < 1]
    assert row.key == str(named.pk) and row.label == "請假規定"


def test_the_ledger_lists_costs_in_their_currency(admin_client, spent):
    page = admin_client.get("/admin/usage/usagerecord/").content.decode()
    assert "US$0.0042" in page and "US$1.50" in page
    assert "0.0042000000" not in page
