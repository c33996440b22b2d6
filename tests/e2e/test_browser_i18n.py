"""The chat page in Chinese: from the browser's language at first, then the user's choice in the
page; the templates and the scripts' strings (Django's JavaScript catalogue) both follow."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice_and_assistant(db):
    """Written before the browser starts."""
    make_user("alice")
    make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        tool_keys=["calculate", "current_time"],
    )


def test_traditional_from_the_browser_then_simplified_by_choice(
    alice_and_assistant, asgi_server, browser_page
):
    page = browser_page
    page.set_extra_http_headers({"Accept-Language": "zh-TW,zh;q=0.9,en;q=0.5"})
    page.goto(asgi_server + "/")
    assert page.inner_text("h1") == "登入"
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_selector("#status[data-state=connected]")
    assert page.get_attribute("html", "lang") == "zh-hant"
    assert page.inner_text("#new-chat") == "新對話"  # the template
    assert page.inner_text("#status") == "已連線"  # a script's string
    assert page.get_attribute("#text", "placeholder") == "傳訊息給 Assistant"
    assert page.locator("#empty .chip").all_inner_texts() == ["現在幾點？", "12*(3+4) 等於多少？"]
    page.click("#empty .chip:text('12*(3+4) 等於多少？')")
    page.wait_for_selector(".msg.agent[data-status=completed]")
    assert "= 84" in page.inner_text(".msg.agent .body")
    assert page.inner_text("#sessions .group-label") == "今天"
    assert page.get_attribute(".msg.agent button[data-action=copy]", "aria-label") == "複製"
    assert page.get_attribute(".msg.agent button[data-action=retry]", "aria-label") == "再試一次"
    screenshots(page, "i18n-zh-hant")

    with page.expect_navigation():
        page.select_option("#language", "zh-hans")  # the choice beats the browser's language
    page.wait_for_selector("#status[data-state=connected]")
    page.wait_for_selector(".msg.agent[data-status=completed]")  # the same chat reopens
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert page.inner_text("#new-chat") == "新对话"
    assert page.inner_text("#status") == "已连接"
    assert page.get_attribute(".msg.agent button[data-action=retry]", "aria-label") == "重试"
    assert page.input_value("#language") == "zh-hans"
    screenshots(page, "i18n-zh-hans")

    with page.expect_navigation():
        page.select_option("#language", "en")
    page.wait_for_selector("#status[data-state=connected]")
    assert page.inner_text("#new-chat") == "New chat" and page.inner_text("#status") == "connected"
    assert page.console_errors == []


@pytest.fixture
def alice_and_the_demo_team(db):
    """The demo agents (entry agent, task, weather and reminder experts …), before the browser."""
    from agents.demo import seed_demo_agents

    make_user("alice")
    seed_demo_agents()


def test_a_chinese_errand_is_answered_in_chinese_through_every_expert(
    alice_and_the_demo_team, asgi_server, errand_page
):
    """Tool messages, dates and the offline model in the words' language, on an English page."""
    page = errand_page
    sign_in_as(page, asgi_server)
    assert page.get_attribute("html", "lang") == "en"
    page.fill("#text", "周末早上去机场接人")
    page.press("#text", "Enter")
    # The weather expert asks which city (a question to the user, in the words' language).
    page.wait_for_selector(".human-card .human-free input", timeout=30_000)
    assert "哪个城市" in page.inner_text(".human-card")
    page.fill(".human-card .human-free input", "台北")
    page.click(".human-card .human-send")
    page.wait_for_selector("#transcript > .msg.agent[data-status=completed]", timeout=30_000)
    answer = page.inner_text("#transcript > .msg.agent .body")
    assert answer.startswith("[离线模型]"), answer
    assert "已创建" in answer, answer
    # 20:00 the day before: on a Friday evening the reminder expert says that time has passed.
    reminded = "已设置提醒" in answer or "未设置提醒" in answer
    assert "星期六" in answer and reminded, answer
    for english in ("Created", "Reminder set", "Saturday", "says:"):
        assert english not in answer, (english, answer)
    screenshots(page, "i18n-errand-zh-hans")
    assert page.console_errors == []
