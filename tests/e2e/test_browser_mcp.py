"""An MCP tool on the chat page: its call shows how far it got while the server reports progress,
then its result, live and after a reload; screenshots in light, dark and on a phone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.mcp.models import McpServer
from agents.mcp.services import server_sync
from tests.e2e.conftest import screenshot, screenshots, sign_in_as
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI, text, tool_call
from tests.mcp.conftest import http_server_process

pytestmark = pytest.mark.django_db(transaction=True)
CHIP = "#transcript .msg.tool summary"


@pytest.fixture
def ledger_server(db, tmp_path: Path) -> Iterator[McpServer]:
    """The test MCP server over HTTP, synced, as "ledger-http"."""
    with http_server_process(tmp_path / "ledger.log") as url:
        server = McpServer.objects.create(
            name="ledger-http", display_name="Ledger", transport="http", url=url
        )
        server_sync(server=server)
        yield server


@pytest.fixture
def fake_model(ledger_server) -> Iterator[FakeOpenAI]:
    """alice, and an entry agent with the server's slow tool on the fake model."""
    make_user("alice")
    make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        provider="openai",
        model="fake",
        tool_keys=["mcp.ledger-http.slow"],
    )
    server = FakeOpenAI().start()
    server.script(
        tool_call("mcp__ledger-http__slow", {"steps": 6}), text("The ledger is done: slow done.")
    )
    yield server
    server.stop()


def test_an_mcp_call_shows_its_progress_then_its_result(
    fake_model, start_asgi_server, browser_page
):
    server = start_asgi_server(
        OPENAI_BASE_URL=fake_model.base_url, OPENAI_API_KEY="test-key", OPENAI_MAX_RETRIES="0"
    )
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", "close the ledger")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "s => [...document.querySelectorAll(s)].some(c => /… step \\d of 6/.test(c.textContent))",
        arg=CHIP,
    )
    screenshot(page, "mcp-tool-progress")
    page.wait_for_selector("#transcript .msg.agent[data-status=completed]")
    chip = page.locator(CHIP).first
    # A sentence (the server's name, the tool, what it said), not the function name.
    assert "mcp__ledger-http__slow" not in chip.text_content()
    assert chip.text_content().endswith(": slow done")
    assert page.locator("#transcript .msg.tool").first.get_attribute("data-status") == "done"
    screenshots(page, "mcp-tool-call")
    page.reload()
    page.wait_for_selector(CHIP)
    assert page.locator(CHIP).first.text_content().endswith(": slow done")
    assert page.console_errors == []
