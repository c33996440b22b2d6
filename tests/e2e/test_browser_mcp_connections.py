"""The connections page in a browser: from the chat page's link, a user connects their own account
to a per-user system and disconnects it; the token is never shown back; screenshots."""

from __future__ import annotations

import pytest

from agents.mcp.models import McpConnection, McpServer
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_user_connects_and_disconnects_their_own_account(db, start_asgi_server, browser_page):
    alice = make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True)
    McpServer.objects.create(
        name="hr-directory",
        display_name="員工資料 Staff directory",
        description="Your HR records: leave balance, payslips, contacts.",
        transport="http",
        url="http://127.0.0.1:9/mcp",
        user_identity="token",
    )
    server = start_asgi_server()
    page = browser_page
    sign_in_as(page, server.url)
    page.click(".account a:text('Connections')")
    page.wait_for_selector(".system[data-server=hr-directory][data-connected=false]")
    page.fill(".system[data-server=hr-directory] input[name=token]", "tok-alice-42")
    page.click(".system[data-server=hr-directory] button[value=connect]")
    page.wait_for_selector(".system[data-server=hr-directory][data-connected=true]")
    assert "tok-alice-42" not in page.content()  # never shown back
    assert McpConnection.objects.filter(user=alice).count() == 1
    screenshots(page, "mcp-connections")
    page.click(".system[data-server=hr-directory] button[value=disconnect]")
    page.wait_for_selector(".system[data-server=hr-directory][data-connected=false]")
    assert not McpConnection.objects.exists()
    assert page.console_errors == []
