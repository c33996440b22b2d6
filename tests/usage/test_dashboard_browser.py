"""The cost dashboard in a real browser under the site's CSP: the chart draws, nothing is
blocked, and a bar names its day, agent and cost."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.e2e.conftest import browser_page, chromium, screenshots, start_asgi_server  # noqa: F401
from tests.factories import make_user
from tests.usage.conftest import record

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def spending(db) -> None:
    """A staff member, and a week of spending by three agents."""
    make_user("auditor", is_staff=True, is_superuser=True)
    alice = make_user("alice")
    today = timezone.localdate()
    for days_ago in range(7):
        for index, agent in enumerate(("assistant", "finance", "planner")):
            cost = f"0.{days_ago + 1}{index + 1}"
            record(alice, agent, today - timedelta(days=days_ago), cost, uuid.uuid4())


def test_the_dashboard_draws_its_chart_with_nothing_blocked(
    spending,
    start_asgi_server,  # noqa: F811
    browser_page,  # noqa: F811
):
    server = start_asgi_server()
    page = browser_page
    problems: list[str] = []  # console errors but the browser's own favicon.ico probe
    page.on(
        "console",
        lambda m: (
            m.type == "error"
            and not m.location.get("url", "").endswith("/favicon.ico")
            and problems.append(f"{m.text} {m.location.get('url')}")
        ),
    )
    page.goto(server.url + "/admin/login/?next=/admin/usage/usagerecord/dashboard/")
    page.fill("#id_username", "auditor")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_selector("#usage-chart-svg rect.usage-bar")
    bars = page.locator("#usage-chart-svg rect.usage-bar")
    assert bars.count() == 21
    box = bars.first.bounding_box()
    assert box and box["width"] > 5 and box["height"] > 1  # drawn, not collapsed
    titles = page.eval_on_selector_all(
        "#usage-chart-svg rect.usage-bar title", "els => els.map(e => e.textContent)"
    )
    today = timezone.localdate().isoformat()
    assert f"{today} · planner: US$0.13" in titles
    legend = page.inner_text("#usage-chart")
    assert "assistant" in legend and "finance" in legend and "planner" in legend
    assert problems == []  # no CSP violation, no script error, no missing file
    screenshots(page, "usage-dashboard")
