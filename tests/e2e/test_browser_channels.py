"""The channel link pages in a browser: an unknown LINE account's link confirmed by its signed-in
owner in Chinese, then the list of links, where one is removed; and the admin's page of links
saying which channels are off."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from chat.channels.models import ChannelLink, LinkCode
from tests.e2e.conftest import screenshots
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(page, base_url: str, username: str, path: str) -> None:
    """Open `path`, sign in on the login page it sends to, and land back on it."""
    page.goto(base_url + path)
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    with page.expect_navigation():
        page.click("[type=submit]")


@pytest.fixture
def code(db) -> LinkCode:
    """alice, and a code sent to a LINE account that wrote to the bot; written before the
    browser starts."""
    make_user("alice")
    make_user("root", is_staff=True, is_superuser=True)
    return LinkCode.objects.create(
        code="linkcode-for-the-browser",
        channel="line",
        external_id="U4af4980629",
        expires_at=timezone.now() + timedelta(minutes=30),
    )


def test_linking_confirming_listing_and_removing_in_chinese(code, asgi_server, browser_page):
    page = browser_page
    page.set_extra_http_headers({"Accept-Language": "zh-TW,zh;q=0.9"})
    sign_in(page, asgi_server, "alice", f"/channels/link/{code.code}/")
    assert page.inner_text("h1") == "連結聊天帳號"
    assert "要把這個 LINE 帳號連結到 alice 嗎" in page.inner_text("main")
    screenshots(page, "channels-link-confirm")
    page.click("button[type=submit]")
    page.wait_for_selector(".planner-items li")
    assert "U4af4980629" in page.inner_text(".planner-items")
    assert "已連結" in page.inner_text("main")
    screenshots(page, "channels-links")
    assert ChannelLink.objects.get().user.username == "alice"
    page.click(".planner-items button[aria-pressed=true]")  # reminders here: off
    page.wait_for_selector(".planner-items button[aria-pressed=false]")
    assert not ChannelLink.objects.get().reminders
    page.click(".planner-items button[data-action=remove]")
    page.wait_for_selector(".planner-empty")
    assert not ChannelLink.objects.exists()
    page.goto(asgi_server + f"/channels/link/{code.code}/")  # used up
    assert "已過期或已使用" in page.inner_text("main")


def test_the_admin_says_which_channels_are_off(code, asgi_server, browser_page):
    page = browser_page
    sign_in(page, asgi_server, "root", "/admin/chat_channels/channellink/")
    messages = page.inner_text(".messagelist")
    assert "LINE is off" in messages and "Slack is off" in messages
    screenshots(page, "channels-admin-links")
