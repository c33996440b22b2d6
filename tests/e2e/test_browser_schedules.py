"""Asking for work on a schedule in the chat page: the confirmation with its undo button, the
undo, and the tasks page listing the schedule with pause and resume (offline model)."""

from __future__ import annotations

import pytest

from reminders.models import ScheduledPrompt
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

ASKED = "每週一早上請財務 Agent 生成週報告"
DONE_CHIP = ".msg.tool[data-status=done]"


@pytest.fixture
def team(db):
    """alice, an entry agent (offline model) that puts work on a schedule, and finance."""
    make_user("alice")
    finance = make_agent(
        "finance",
        display_name="Finance expert",
        display_names={"en": "Finance expert", "zh-hant": "財務專家", "zh-hans": "财务专家"},
        tags=["finance", "財務", "财务"],
    )
    make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        tool_keys=["schedule_prompt"],
        subagents=[finance],
    )


def ask(page, words: str) -> None:
    page.fill("#text", words)
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{DONE_CHIP} .undo-btn")
    page.wait_for_selector(".msg.agent[data-status=completed]")


def test_asking_in_the_chat_confirms_with_undo_and_the_tasks_page_lists_it(
    team, asgi_server, browser_page
):
    page = browser_page
    sign_in_as(page, asgi_server)
    ask(page, ASKED)
    chip = page.inner_text(DONE_CHIP)
    assert "財務專家" in chip and "生成週報告" in chip and "09:00" in chip
    answer = page.locator(".msg.agent[data-status=completed] .body").last.inner_text()
    assert "財務專家" in answer
    # The confirmation is in the language of the request, its button too.
    assert page.locator(f"{DONE_CHIP} .undo-btn").inner_text() == "復原"
    screenshots(page, "autonomy-schedules-chat")
    scheduled = ScheduledPrompt.objects.get()
    assert scheduled.prompt == "生成週報告" and scheduled.agent.name == "finance"

    page.goto(asgi_server + "/tasks/")
    item = page.locator(".schedule-item")
    item.wait_for()
    assert "生成週報告" in item.inner_text() and "every Monday at 09:00" in item.inner_text()
    assert "Next run" in item.inner_text()
    screenshots(page, "autonomy-schedules-tasks")
    item.locator("button", has_text="Pause").click()
    page.wait_for_selector(".schedule-item[data-paused=true]")
    assert not ScheduledPrompt.objects.get().enabled
    page.locator(".schedule-item button", has_text="Resume").click()
    page.wait_for_selector(".schedule-item[data-paused=false]")
    assert ScheduledPrompt.objects.get().enabled

    page.locator(".schedule-item button", has_text="Edit").click()
    page.fill(".schedule-item input[name=schedule]", "someday")
    page.locator(".schedule-item button", has_text="Save").click()
    page.wait_for_selector(".schedule-item .editor-notice:not([hidden])")
    assert "Say which days" in page.inner_text(".schedule-item .editor-notice")
    page.fill(".schedule-item input[name=schedule]", "每月1號 10:00")
    page.fill(".schedule-item input[name=text]", "生成月報告")
    screenshots(page, "autonomy-schedules-edit")
    page.locator(".schedule-item button", has_text="Save").click()
    page.wait_for_selector(".schedule-item:has-text('on day 1 of every month at 10:00')")
    assert "生成月報告" in page.inner_text(".schedule-item")
    assert ScheduledPrompt.objects.get().prompt == "生成月報告"
    # The browser logs the refused edit's 400 (shown in the form); nothing else went wrong.
    assert [e for e in page.console_errors if "status of 400" not in e] == []


def test_the_undo_button_removes_the_schedule(team, asgi_server, browser_page):
    page = browser_page
    sign_in_as(page, asgi_server)
    ask(page, "every Monday at 9, have finance summarise last week's invoices")
    assert ScheduledPrompt.objects.count() == 1
    page.click(f"{DONE_CHIP} .undo-btn")
    page.wait_for_selector(f"{DONE_CHIP} .undo-status:has-text('Schedule removed.')")
    assert not ScheduledPrompt.objects.exists()
    assert page.locator(f"{DONE_CHIP} .undo-btn").count() == 0
    assert page.console_errors == []
