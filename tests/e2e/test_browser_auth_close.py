"""The page tells "sign in again" from "server down": an unauthenticated chat socket is closed
with 4401 (not refused with HTTP 403), and a page whose session ended goes to the login page."""

from __future__ import annotations

import threading

import pytest
from django.contrib.sessions.models import Session
from django.db import connection

from tests.e2e.conftest import sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

# Open the chat websocket from the page and report how it closed.
CLOSE_CODE = """() => new Promise((resolve) => {
  const socket = new WebSocket(`ws://${location.host}/ws/chat/`);
  socket.addEventListener("close", (e) => resolve(e.code));
})"""


def end_sessions() -> None:
    """Every session ends, as when the user signs out elsewhere or the session expires."""
    Session.objects.all().delete()
    connection.close()


@pytest.fixture
def alice_and_assistant(db):
    """Written before the browser starts (see test_browser_chat)."""
    make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True)


def test_an_unauthenticated_page_socket_is_closed_with_4401(
    alice_and_assistant, start_asgi_server, browser_page
):
    server = start_asgi_server()
    browser_page.goto(server.url + "/accounts/login/")
    assert browser_page.evaluate(CLOSE_CODE) == 4401  # a refused handshake shows 1006


def test_a_page_whose_session_ended_goes_to_the_login_page(
    alice_and_assistant, start_asgi_server, browser_page
):
    server = start_asgi_server()
    sign_in_as(browser_page, server.url)
    signed_out = threading.Thread(target=end_sessions)  # the ORM refuses Playwright's loop
    signed_out.start()
    signed_out.join()
    server.kill()  # the socket drops; the page reconnects with its now-invalid cookie
    server.start()
    browser_page.wait_for_url("**/accounts/login/?next=*", timeout=20000)
    assert browser_page.locator("#id_username").is_visible()
