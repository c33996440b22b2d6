"""The offline demo's LINE phone in a browser, against daphne with DEMO_LINE on as `make run`
has it: a linked person's question answered through the real webhook (English and Chinese,
with numbered sources), and an unknown account's link note, its address a working link."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chat.channels.demo.store import demo_line_seed
from tests.e2e.conftest import AsgiServer, screenshots
from tests.factories import make_agent, make_user
from tests.postgres import other_sessions_closed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo_server(django_db_setup, request) -> Iterator[AsgiServer]:
    """daphne with the demo's LINE, its own address as the demo's site (known before it
    starts); alice's demo account linked, bob's not."""
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    make_user("alice")
    make_user("bob")
    demo_line_seed(username="alice")
    server = AsgiServer({"DEMO_LINE": "true"}, request.node)
    server.env["DEMO_SITE_URL"] = server.url
    server.start()
    try:
        yield server
    finally:
        server.stop()
        other_sessions_closed(names=[server.app_name])


def open_phone(page, url: str, username: str) -> None:
    page.goto(url + "/demo/line/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    with page.expect_navigation():
        page.click("[type=submit]")
    page.wait_for_selector(".phone")


def write(page, text: str) -> str:
    """Send `text` from the phone; the bot's next message."""
    replies = page.locator(".bubble.bot")
    before = replies.count()
    page.fill(".phone-form input[name=text]", text)
    page.click(".phone-form button")
    replies.nth(before).wait_for(timeout=30000)
    return replies.nth(before).inner_text()


def test_a_linked_person_is_answered_through_the_webhook(demo_server, browser_page):
    page = browser_page
    open_phone(page, demo_server.url, "alice")
    assert "linked" in page.inner_text(".phone-account")
    assert "4" in write(page, "what is 2+2?")
    assert page.locator(".bubble.me").all_inner_texts() == ["what is 2+2?"]
    screenshots(page, "demo-line")
    assert not page.console_errors


def test_an_unknown_account_gets_a_link_to_confirm(demo_server, browser_page):
    page = browser_page
    open_phone(page, demo_server.url, "bob")
    note = write(page, "hello")
    link = page.locator(".bubble.bot a")
    assert "/channels/link/" in note and link.count() == 1
    assert link.get_attribute("href").startswith(f"{demo_server.url}/channels/link/")
    link.click()
    page.wait_for_selector("form button[type=submit]")  # the confirm page, signed in as bob
    page.click("form button[type=submit]")
    page.wait_for_url("**/channels/links/")  # confirmed: the list of linked accounts
    page.goto(demo_server.url + "/demo/line/")
    # The phone shows its history a moment after the page: counted before that, the bot's
    # earlier note would read as the answer to the next message.
    page.locator(".bubble.me", has_text="hello").wait_for()
    assert "4" in write(page, "what is 2+2?")
