"""The MCP admin in a browser: add a server's tools by syncing, see a later release's changes
held for review (added, removed, changed with before and after), accept them; screenshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.mcp.models import McpServer, McpSync, McpTool
from tests.e2e.conftest import screenshots
from tests.e2e.test_browser_admin_map import admin_sign_in, problems
from tests.factories import make_user
from tests.mcp.conftest import stdio_command

pytestmark = pytest.mark.django_db(transaction=True)


def commands(log: Path, variant: int) -> str:
    """MCP_STDIO_COMMANDS for the server process: the test server at a release."""
    return json.dumps({"test-ledger": stdio_command(log, variant)})


def sync_action(page, url: str) -> None:
    """Tick the ledger on the servers' list and run "Sync tools now"."""
    page.goto(url + "/admin/mcp/mcpserver/")
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", "sync_tools")
    page.click("button[name=index]")
    page.wait_for_selector("ul.messagelist")


def test_an_admin_syncs_reviews_and_accepts_a_servers_tools(
    db, start_asgi_server, browser_page, tmp_path
):
    make_user("root", is_staff=True, is_superuser=True)
    McpServer.objects.create(
        name="ledger", display_name="帳本 Ledger", transport="stdio", command="test-ledger"
    )
    log = tmp_path / "ledger.log"
    page = browser_page
    first = start_asgi_server(MCP_STDIO_COMMANDS=commands(log, 1))
    admin_sign_in(page, first.url)
    sync_action(page, first.url)
    assert "tools, applied" in page.inner_text("ul.messagelist")
    page.goto(first.url + f"/admin/mcp/mcpserver/{McpServer.objects.get().pk}/change/")
    page.wait_for_selector("#tools-group")
    assert "mcp.ledger.record" in page.inner_text("#tools-group")
    page.locator("#tools-group").scroll_into_view_if_needed()
    screenshots(page, "admin-mcp-server")
    first.stop()

    # The server's next release: the admin syncs, and changed tools wait for review.
    second = start_asgi_server(MCP_STDIO_COMMANDS=commands(log, 2))  # (signed in already)
    sync_action(page, second.url)
    assert "review the sync" in page.inner_text("ul.messagelist")
    assert McpTool.objects.get(name="add").status == "held"
    sync = McpSync.objects.get(status="pending")
    page.goto(second.url + f"/admin/mcp/mcpsync/{sync.pk}/change/")
    body = page.inner_text("#content")
    assert "Added multiply" in body and "Removed shout: no longer listed" in body
    assert "Changed add: description and input schema" in body
    assert page.locator("table.mcp-diff caption").all_text_contents() == ["add"]
    screenshots(page, "admin-mcp-sync")
    page.click("input[name=_accept]")
    page.wait_for_selector("ul.messagelist")
    assert "/admin/mcp/mcpserver/" in page.url  # back on the server's page
    assert "changes accepted" in page.inner_text("ul.messagelist")
    assert McpTool.objects.get(name="add").status == "active"
    assert McpTool.objects.get(name="shout").status == "removed"
    assert problems(page) == []
