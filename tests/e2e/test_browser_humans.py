"""Humans in the loop in a real browser: the agent's question to the user as buttons, and an
expert's tool call waiting for staff approval ("Waiting for approval from …"), approved on the
live staff inbox page; both survive a reload."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from tests.e2e.conftest import screenshot, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

CARD = ".human-waits .human-card"
# What a reload must show again: the messages and the waits' states. (Not the tool summaries:
# Postgres' jsonb stores the arguments with their keys reordered.)
SHOWN = """() => [...document.querySelectorAll(
  '#transcript .msg.user .body, #transcript .msg.agent .body, #transcript .human-state'
)].map((e) => e.textContent)"""


@pytest.fixture
def asks_the_user(db):
    """alice and an entry agent (offline model) that may ask her (written before the browser
    starts: Playwright runs the test body in a greenlet)."""
    make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True, tool_keys=["ask_user"])


def test_ask_user_options_are_buttons_and_the_answer_resumes_the_turn(
    asks_the_user, asgi_server, browser_page
):
    page = browser_page
    sign_in_as(page, asgi_server)
    page.fill("#text", "help me choose between tea, coffee or juice")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{CARD} .human-option")
    assert (
        page.inner_text(f"{CARD} .human-question")
        == "Which would you like: tea or coffee or juice?"
    )
    assert page.locator(f"{CARD} .human-option").all_inner_texts() == ["tea", "coffee", "juice"]
    assert page.get_attribute(".msg.tool", "data-human") == "pending"
    assert not page.is_hidden("#stop")  # the turn is still on: it waits for her
    screenshot(page, "humans-ask-user")

    page.click(f"{CARD} .human-option:text('coffee')")
    page.wait_for_selector(".msg.agent[data-status=completed]")
    assert "alice answered: coffee" in page.inner_text(".msg.agent .body")
    assert page.locator(CARD).count() == 0
    assert page.get_attribute(".msg.tool", "data-human") == "answered"
    live = page.evaluate(SHOWN)

    page.reload()
    page.wait_for_selector(".msg.agent[data-status=completed]")
    assert page.evaluate(SHOWN) == live
    assert page.locator(CARD).count() == 0
    assert "Answered by alice: “coffee”" in page.inner_text(".msg.tool .human-state")
    assert page.console_errors == []


@pytest.fixture
def approval_in_an_expert(db):
    """assistant → tasks, whose data-changing tools need the Planners group's approval."""
    make_user("alice")
    stella = make_user("stella", is_staff=True)
    stella.groups.add(Group.objects.create(name="Planners"))
    tasks = make_agent(
        "tasks",
        display_name="Task expert",
        tags=["task"],
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )
    make_agent("assistant", display_name="Assistant", is_entry=True, subagents=[tasks])


def test_an_experts_tool_waits_for_approval_given_on_the_live_inbox_page(
    approval_in_an_expert, asgi_server, browser_page
):
    page = browser_page
    sign_in_as(page, asgi_server)
    staff = page.context.browser.new_context().new_page()
    staff.console_errors = []
    staff.on("console", lambda m: m.type == "error" and staff.console_errors.append(m.text))
    staff.goto(asgi_server + "/accounts/login/?next=/inbox/")
    staff.fill("#id_username", "stella")
    staff.fill("#id_password", "pw")
    staff.click("button[type=submit]")
    staff.wait_for_selector("#inbox-status[data-state=connected]")
    assert staff.is_visible("#inbox-empty")

    page.fill("#text", "add a task: buy milk tomorrow")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{CARD}.wait")
    assert page.inner_text(f"{CARD} .human-waiting") == (
        "Waiting for approval from the Planners team: Create a task…"
    )
    screenshot(page, "humans-waiting-for-approval")

    item = staff.wait_for_selector(".inbox-item[data-status=pending]")  # live, no reload
    assert "Asks to: Create a task" in item.inner_text()
    assert "Task expert" in item.inner_text() and "for alice" in item.inner_text()
    assert "buy milk" in staff.inner_text(".inbox-item .call-args")
    screenshot(staff, "humans-inbox")
    staff.click(".inbox-item button:text('Approve')")
    staff.wait_for_selector("#inbox-done .inbox-item[data-status=approved]")

    page.wait_for_selector(".msg.agent[data-depth='0'][data-status=completed]")
    assert page.locator(CARD).count() == 0
    assert "Approved by stella" in page.text_content(".msg.tool[data-human] .human-state")
    decided = staff.request.get(asgi_server + "/api/v1/inbox/?status=decided").json()
    assert [i["executed"] for i in decided["results"]] == [True]
    page.reload()
    page.wait_for_selector(".msg.agent[data-depth='0'][data-status=completed]")
    assert page.locator(CARD).count() == 0
    assert page.console_errors == [] and staff.console_errors == []
