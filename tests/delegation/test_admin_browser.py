"""The admin in a real browser at 1280 px: the routing-rules and eval-case inlines fit the
width (no sideways scrolling), and the grouped home shows its shortcuts; screenshots taken."""

from __future__ import annotations

import pytest

from delegation.evals.models import EvalCase, EvalSuite
from delegation.routing.models import RoutingPolicy, RoutingRule
from tests.e2e.conftest import (  # noqa: F401
    browser_page,
    chromium,
    screenshot,
    screenshots,
    start_asgi_server,
)
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = 1280
KEYWORDS = "財務, 財务, 營收, 营收, 預算, 预算, 報銷, 报销, 費用, 费用, finance, revenue, budget"


@pytest.fixture
def wide_forms() -> tuple[int, int]:
    """A policy with long rules and a suite with long cases."""
    make_user("root", is_staff=True, is_superuser=True)
    finance = make_agent("finance", display_name="Finance expert")
    policy = RoutingPolicy.objects.create(name="departments", description="Departments")
    for order, name in enumerate(("finance", "strict-request", "guided-tour")):
        RoutingRule.objects.create(
            policy=policy,
            order=order,
            name=name,
            keywords=KEYWORDS,
            mode="chat",
            target=finance,
            reason="The user asked for answers strictly from the documents, with sources.",
        )
    suite = EvalSuite.objects.create(name="planner", agent=finance)
    for order, message in enumerate(("創建任務明天去買菜", "Remind me to call Ana tomorrow at 9")):
        EvalCase.objects.create(suite=suite, order=order, name=f"case {order}", message=message)
    return policy.pk, suite.pk


def sign_in(page, url: str) -> None:
    page.goto(url + "/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_selector("#group-agents")


def test_the_wide_inlines_fit_1280_px(wide_forms, start_asgi_server, browser_page):  # noqa: F811
    policy_id, suite_id = wide_forms
    server = start_asgi_server()
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    sign_in(page, server.url)
    assert page.locator("#shortcut-delegation_run_changelist").is_visible()
    screenshots(page, "admin-home")
    page.set_viewport_size({"width": WIDTH, "height": 900})
    for path, group in (
        (f"/admin/routing/routingpolicy/{policy_id}/change/", "#rules-group"),
        (f"/admin/evals/evalsuite/{suite_id}/change/", "#cases-group"),
    ):
        page.goto(server.url + path)
        page.wait_for_selector(group)
        table = page.locator(f"{group} table").bounding_box()
        assert table and table["x"] + table["width"] <= WIDTH
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
        keywords = page.locator(f"{group} tbody tr").first.bounding_box()
        assert keywords and keywords["width"] > 600  # the rows keep their room, not squeezed
        screenshot(page, f"admin{group.replace('#', '-')}")
