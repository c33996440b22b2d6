"""The admin delegation map and a run's trace in a real browser: drawn, foldable, CSP-clean."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageRole
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from tests.e2e.conftest import screenshots
from tests.factories import make_agent, make_child_run, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def team():
    """An entry agent, two experts in a cycle, an expert the router cannot choose, an agent
    nothing reaches, and one finished turn with tool calls."""
    make_user("root", is_staff=True, is_superuser=True)
    sql = make_agent("sql", description="", tags=[], tool_keys=["calculate"])
    finance = make_agent("finance", tags=["money"], subagents=[sql], max_depth=4)
    sql.allowed_subagents.set([finance])
    boss = make_agent("assistant", is_entry=True, subagents=[finance], tags=["chat"])
    make_agent("archive", tags=["old"])
    user = make_user("alice")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=boss)
    root = run_create(agent=boss, user=user, session=session, task="budget?", transcript=[])
    f = make_child_run(
        caller=root,
        target=finance,
        call_id="c1",
        prompt="budget",
        reason="money words",
        max_steps=5,
    )
    s = make_child_run(
        caller=Run.objects.get(pk=f.pk),
        target=sql,
        call_id="c2",
        prompt="sum",
        reason="",
        max_steps=5,
    )
    t0 = timezone.now() - timedelta(minutes=5)
    for run, a, b, status in (
        (root, 0, 9, "succeeded"),
        (f, 1, 7, "succeeded"),
        (s, 2, 4, "failed"),
    ):
        Run.objects.filter(pk=run.pk).update(
            started_at=t0 + timedelta(seconds=a),
            finished_at=t0 + timedelta(seconds=b),
            status=status,
            usage={"total_tokens": 100 + a},
            answer="12 000 euros",
        )
    Run.objects.filter(pk=s.pk).update(error={"code": "model_error", "message": "boom"})
    ChatMessage.objects.create(
        id=uuid.uuid4(),
        session=session,
        role=MessageRole.TOOL,
        run=f,
        tool={
            "call_id": "x",
            "name": "calculate",
            "arguments": {"expression": "1200*10"},
            "ok": True,
            "result": {"value": 12000},
        },
    )
    assert RunStatus.FAILED == "failed"
    return root, f, s


def problems(page) -> list[str]:
    """Console errors other than a failed load, and every failed load but the favicon (admin
    pages link none; the 404 is the browser's own guess)."""
    errors = [e for e in page.console_errors if not e.startswith("Failed to load resource")]
    return errors + [u for u in page.failed if not u.endswith("/favicon.ico")]


def admin_sign_in(page, url: str) -> None:
    page.failed = []
    page.on("response", lambda r: r.status >= 400 and page.failed.append(r.url))
    page.goto(url + "/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def test_map_is_drawn_with_warnings(team, start_asgi_server, browser_page):
    server = start_asgi_server()
    page = browser_page
    admin_sign_in(page, server.url)
    page.goto(server.url + "/admin/agents/agent/")
    page.click("text=Delegation map")
    page.wait_for_selector("#delegation-map svg")
    names = page.eval_on_selector_all(".map-node", "ns => ns.map(n => n.dataset.agent)")
    assert sorted(names) == ["archive", "assistant", "finance", "sql"]
    box = page.locator("#delegation-map svg").bounding_box()
    assert box["width"] > 500 and box["height"] > 100  # laid out, not collapsed
    warnings = page.inner_text("#map-warnings")
    assert "delegation cycle" in warnings and "nothing reaches it" in warnings
    assert "above the global cap" in warnings and "expert without description or tags" in warnings
    screenshots(page, "admin-delegation-map")
    assert problems(page) == []  # no CSP violation, no script error, nothing missing


def test_trace_nests_folds_and_shows_tool_calls(team, start_asgi_server, browser_page):
    root, finance, sql = team
    server = start_asgi_server()
    page = browser_page
    admin_sign_in(page, server.url)
    page.goto(f"{server.url}/admin/delegation/run/{root.pk}/change/")
    sql_node = page.locator(f"#run-{sql.pk}")
    assert sql_node.is_visible()
    page.locator(f"#run-{finance.pk} > .trace-body > .trace-tool > summary").click()
    assert "12000" in page.locator(f"#run-{finance.pk} > .trace-body > .trace-tool").inner_text()
    assert not page.locator("#raw-fields .field-task").is_visible()  # raw fields folded
    screenshots(page, "admin-run-trace")
    page.locator(f"#run-{finance.pk} > summary").click()  # fold finance: its expert hides
    assert not sql_node.is_visible()
    assert problems(page) == []


def test_new_agent_offer_and_coloured_revision_diff(team, start_asgi_server, browser_page):
    server = start_asgi_server()
    page = browser_page
    admin_sign_in(page, server.url)
    page.goto(server.url + "/admin/agents/agent/add/")
    page.fill("#id_name", "travel")
    page.fill("#id_display_name", "Travel")
    page.fill("#id_description", "Trips and airports.")
    page.fill("#id_tags", "travel, airport")
    page.click("input[name=_save]")
    page.click("text=Add it to Assistant's experts")
    assert "Travel is now one of Assistant's experts." in page.inner_text(".messagelist")
    page.goto(server.url + "/admin/agents/agent/")
    page.click("text=Assistant")
    page.click("text=/revisions?: diff and restore/")
    row = page.locator(".revision-diff").first.locator('[data-field="allowed_subagents"]')
    assert "+ travel" in row.inner_text()
    added = row.locator("ins.diff-new")
    assert added.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(221, 255, 221)"
    screenshots(page, "admin-agent-revisions")
    assert problems(page) == []
