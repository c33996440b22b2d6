"""Tool calls read as sentences in the page (not `calculate({…})`), with the raw call one
click away, and a tool that needs the user's word asks with buttons that finish the turn."""

from __future__ import annotations

import pytest

from reminders.models import Task
from tests.e2e.conftest import screenshot, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

CHIP = ".msg.tool summary"
CARD = ".human-waits .human-card"
ERRAND = "add a task: pick up Anna at the airport Saturday morning"


@pytest.fixture
def planner(db):
    """alice and an entry agent (offline model) that calculates and plans tasks."""
    make_user("alice")
    make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        tool_keys=["calculate", "create_task"],
    )


def test_a_tool_chip_reads_as_a_sentence_with_the_raw_call_one_click_away(
    planner, asgi_server, browser_page
):
    page = browser_page
    sign_in_as(page, asgi_server)
    page.fill("#text", "what is 6*7?")
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.tool[data-status=done]")
    chip = page.inner_text(CHIP)
    assert "Calculated 6*7 = 42" in chip  # the `*` stays a `*`
    assert "calculate(" not in chip and "{" not in chip
    assert page.is_hidden(".msg.tool .tool-raw-result")
    page.click(CHIP)
    raw = page.inner_text(".msg.tool .tool-raw-result")
    assert '"value": 42' in raw and '"expression": "6*7"' in page.inner_text(".msg.tool")
    page.wait_for_selector(".msg.agent[data-status=completed]")
    assert page.console_errors == []


@pytest.mark.parametrize("choice", ["Save it anyway", "Don't save"])
def test_a_clash_asks_with_buttons_and_either_choice_finishes_the_turn(
    planner, asgi_server, errand_page, choice
):
    page = errand_page
    sign_in_as(page, asgi_server)
    page.fill("#text", ERRAND)
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.agent[data-status=completed]")
    page.fill("#text", ERRAND)  # the same again: it clashes with the first
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{CARD} .human-option")
    options = page.locator(f"{CARD} .human-option").all_inner_texts()
    assert options == ["Save it anyway", "Don't save"]
    question = page.inner_text(f"{CARD} .human-question")
    assert "Save it anyway?" in question and "confirm" not in question
    assert "create_task" not in page.inner_text("#transcript")
    screenshot(page, f"tool-confirm-{'yes' if choice.startswith('Save') else 'no'}")

    page.locator(f"{CARD} .human-option", has_text=choice).click()
    page.wait_for_function(
        "() => document.querySelectorAll('.msg.agent[data-status=completed]').length >= 2"
    )
    answer = page.locator(".msg.agent[data-status=completed] .body").last.inner_text()
    assert "confirm" not in answer and "Ask the user" not in answer
    if choice == "Save it anyway":
        assert "Created “pick up Anna at the airport”" in answer
        assert Task.objects.count() == 2
    else:
        assert "You chose “Don't save”, so nothing was done." in answer
        assert Task.objects.count() == 1
    assert page.locator(CARD).count() == 0
    assert page.console_errors == []
