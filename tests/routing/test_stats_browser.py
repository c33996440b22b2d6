"""The routing statistics page in a real browser under the site's CSP: the table and a chart
per expert draw, a bar names its figures, filtering by expert narrows both, nothing is blocked."""

from __future__ import annotations

import pytest
from django.utils import timezone

from delegation.routing.seeds import routing_seed_demo_stats
from tests.e2e.conftest import browser_page, chromium, screenshots, start_asgi_server  # noqa: F401
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_statistics_page_draws_and_filters_with_nothing_blocked(
    start_asgi_server,  # noqa: F811
    browser_page,  # noqa: F811
):
    make_user("auditor", is_staff=True, is_superuser=True)
    routing_seed_demo_stats(entry="assistant", today=timezone.now().date())
    server = start_asgi_server()
    page = browser_page
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            m.type == "error"
            and not m.location.get("url", "").endswith("/favicon.ico")
            and problems.append(f"{m.text} {m.location.get('url')}")
        ),
    )
    page.goto(server.url + "/admin/login/?next=/admin/routing/routingstat/")
    page.fill("#id_username", "auditor")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_selector("figure.routing-chart rect.routing-bar")
    assert page.locator("figure.routing-chart").count() == 5  # hr, finance, legal, math, translator
    box = page.locator("rect.routing-bar").first.bounding_box()
    assert box and box["width"] > 2 and box["height"] > 1
    titles = page.eval_on_selector_all(
        "rect.routing-bar title", "els => els.map(e => e.textContent)"
    )
    today = timezone.now().date().isoformat()
    assert any(t.startswith(f"{today}: ") and "judged good" in t for t in titles)
    screenshots(page, "autonomy-routing-stats")
    page.locator("#routing-stats-charts").scroll_into_view_if_needed()
    screenshots(page, "autonomy-routing-charts")

    page.select_option("#id_expert", "hr")
    page.click("#routing-stats-filters input[type=submit]")
    page.wait_for_url("**expert=hr**")
    assert page.locator("figure.routing-chart").count() == 1
    rows = page.locator("#routing-stats-table tbody tr")
    assert rows.count() == 2  # hr on hr questions, and on finance ones
    assert "hr" in rows.first.inner_text()
    assert problems == []  # no CSP violation, no script error, no missing file
