"""The sessions sidebar in a real browser: reopen the last chat, search, rename, delete, and the
phone drawer. Search, rename and delete go through /api/v1/sessions/."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from tests.e2e.conftest import phone, screenshot, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

TITLES = ["Trip to Lisbon", "Budget review 2025", "Budget planning"]  # oldest first


@pytest.fixture
def three_chats(db):
    """alice's chats (newest: "Budget planning") and one of mallory's, written before the
    browser starts."""
    alice = make_user("alice")
    ChatSession.objects.create(id=uuid.uuid4(), user=make_user("mallory"), title="Budget secrets")
    make_agent("assistant", display_name="Assistant", is_entry=True)
    for title in TITLES:
        session = ChatSession.objects.create(id=uuid.uuid4(), user=alice, title=title)
        ChatMessage.objects.create(
            id=uuid.uuid4(), session=session, role="user", content=f"hello from {title}"
        )


def titles(page) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll('#sessions li[data-session-id]')]
          .filter((li) => !li.hidden).map((li) => li.querySelector('a').firstChild.textContent)"""
    )


SESSION_COUNT = "n => document.querySelectorAll('#sessions li[data-session-id]').length === n"


def test_last_chat_reopens_new_chat_starts_empty_and_phones_get_a_drawer(
    three_chats, asgi_server, browser_page
):
    page = browser_page
    page.goto(asgi_server + "/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    page.wait_for_selector(".form-error")
    screenshot(page, "sign-in-error")
    sign_in_as(page, asgi_server)
    assert titles(page) == ["Budget planning", "Budget review 2025", "Trip to Lisbon"]
    assert page.is_visible("#empty")  # nothing opened yet: the welcome with suggestions
    page.click("#sessions a:text('Trip to Lisbon')")
    page.wait_for_selector(".msg.user:has-text('hello from Trip to Lisbon')")
    assert page.get_attribute("#sessions li.active a", "aria-current") == "page"
    assert not page.is_visible("#empty")

    page.goto(asgi_server + "/")  # no #id in the address: the last chat comes back
    page.wait_for_selector(".msg.user:has-text('hello from Trip to Lisbon')")
    assert page.inner_text("#sessions li.active a") == "Trip to Lisbon"

    page.click("#new-chat")
    assert page.locator("#transcript .msg").count() == 0
    assert page.is_visible("#empty") and page.locator("#sessions li.active").count() == 0
    page.fill("#text", "a draft for later")
    page.reload()
    page.wait_for_selector("#status[data-state=connected]")
    assert page.locator("#transcript .msg").count() == 0  # a new chat stays new
    assert page.input_value("#text") == "a draft for later"  # with its draft

    # On a phone the chat list is a drawer.
    phone(page)
    screenshot(page, "phone-empty-light")
    sidebar = page.locator("#sidebar")
    assert sidebar.bounding_box()["x"] + sidebar.bounding_box()["width"] <= 0  # out of view
    assert not page.is_visible("#sessions")
    page.click("#menu")
    page.wait_for_timeout(300)
    assert sidebar.bounding_box()["x"] == 0
    assert page.get_attribute("#menu", "aria-expanded") == "true"
    screenshot(page, "phone-drawer-open")
    page.click("#sessions a:text('Budget planning')")
    page.wait_for_selector(".msg.user:has-text('hello from Budget planning')")
    page.wait_for_timeout(300)
    assert sidebar.bounding_box()["x"] + sidebar.bounding_box()["width"] <= 0
    # The composer and the header fit the screen: nothing scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.click("#toggle-theme")
    assert page.get_attribute("html", "data-theme") == "dark"
    screenshot(page, "phone-chat-dark")
    page.reload()
    page.wait_for_selector("#status[data-state=connected]")
    assert page.get_attribute("html", "data-theme") == "dark"  # remembered
    assert page.console_errors == []


def test_search_rename_and_delete_through_the_api(three_chats, asgi_server, browser_page):
    page = browser_page
    sign_in_as(page, asgi_server)

    with page.expect_response(lambda r: "/api/v1/sessions/search/?q=budget" in r.url) as searched:
        page.fill("#session-search", "budget")
    assert searched.value.status == 200
    page.wait_for_function(SESSION_COUNT, arg=2)
    assert titles(page) == ["Budget planning", "Budget review 2025"]  # not mallory's
    # Search reads what was said, not only titles, and shows where it matched.
    with page.expect_response(lambda r: "/api/v1/sessions/search/" in r.url) as searched:
        page.fill("#session-search", "hello from trip")
    assert searched.value.status == 200
    page.wait_for_function(SESSION_COUNT, arg=1)
    assert titles(page) == ["Trip to Lisbon"]
    assert page.inner_text("#sessions .snippet") == "hello from Trip to Lisbon"
    screenshot(page, "sessions-content-search")
    with page.expect_response(lambda r: "/api/v1/sessions/" in r.url) as cleared:
        page.fill("#session-search", "nothing like this")
    assert cleared.value.ok
    page.wait_for_selector("#sessions-empty:text('No chats match your search.')")
    page.fill("#session-search", "")
    page.wait_for_function(SESSION_COUNT, arg=3)

    # Rename: the pencil turns the title into a field; Enter saves it on the server.
    item = page.locator("#sessions li", has_text="Budget review 2025")
    item.hover()
    item.locator("button.rename").click()
    field = page.locator("#sessions input.rename-input")
    field.fill("Quarterly budget")
    with page.expect_response(lambda r: r.request.method == "PATCH") as renamed:
        field.press("Enter")
    assert renamed.value.status == 200
    assert renamed.value.json()["title"] == "Quarterly budget"
    assert "Quarterly budget" in titles(page)
    screenshot(page, "sessions-renamed")

    # Delete asks first; Cancel keeps the chat, Delete removes it.
    item = page.locator("#sessions li", has_text="Trip to Lisbon")
    item.locator("a").click()
    page.wait_for_selector(".msg.user:has-text('hello from Trip to Lisbon')")
    item.locator("button.delete").click()
    assert page.is_visible("#confirm-delete")
    assert "Trip to Lisbon" in page.inner_text("#confirm-delete")
    screenshot(page, "sessions-confirm-delete")
    page.click("#confirm-delete button[value=cancel]")
    assert not page.is_visible("#confirm-delete")
    assert "Trip to Lisbon" in titles(page)
    item.locator("button.delete").click()
    with page.expect_response(lambda r: r.request.method == "DELETE") as deleted:
        page.click("#confirm-delete button[value=delete]")
    assert deleted.value.status == 204
    page.wait_for_function(SESSION_COUNT, arg=2)
    assert page.locator("#transcript .msg").count() == 0  # the open chat was the deleted one

    page.goto(asgi_server + "/")
    page.wait_for_selector("#status[data-state=connected]")
    assert titles(page) == ["Quarterly budget", "Budget planning"]
    assert page.locator("#transcript .msg").count() == 0
    assert page.console_errors == []
