"""Per-user servers with each user's own token: connected once (the page or REST), sealed at rest,
sent only on that user's calls; a user who has not connected gets a clear message, never
anyone else's rights."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agents.mcp.models import McpConnection
from agents.mcp.services import server_sync
from agents.registry import ToolContext, execute, get_tool
from tests.humans.helpers import client

pytestmark = pytest.mark.django_db
URL = "/api/v1/mcp-connections/ledger-http/"


@pytest.fixture
def personal(http_server):
    """The HTTP test server, acting with each user's own token."""
    http_server.user_identity = "token"
    http_server.save()
    server_sync(server=http_server)
    return http_server


def bearer(user) -> dict:
    """What `bearer` (the Authorization header the server received) answers for `user`."""
    result = execute(get_tool("mcp.ledger-http.bearer"), ToolContext(user=user), "{}")
    return result.as_shown()


def test_a_user_who_has_not_connected_is_told_how_and_nothing_is_sent(personal, user):
    shown = bearer(user)
    assert shown["error"]["code"] == "tool_needs_connection"
    assert "/connections/" in shown["error"]["message"]
    assert "Ledger (HTTP)" in shown["error"]["message"]


def test_each_user_s_calls_carry_their_own_token_and_never_another_s(personal, user, other_user):
    mine, theirs = client(user), client(other_user)
    assert (
        mine.put(
            "/api/v1/mcp-connections/ledger-http/", {"token": "tok-alice"}, format="json"
        ).status_code
        == 200
    )
    assert bearer(other_user)["error"]["code"] == "tool_needs_connection"  # not alice's rights
    assert (
        theirs.put(
            "/api/v1/mcp-connections/ledger-http/", {"token": "tok-bob"}, format="json"
        ).status_code
        == 200
    )
    assert bearer(user)["result"]["text"] == "Bearer tok-alice"
    assert bearer(other_user)["result"]["text"] == "Bearer tok-bob"
    assert bearer(user)["result"]["text"] == "Bearer tok-alice"
    listed = mine.get("/api/v1/mcp-connections/").json()
    assert listed == [
        {
            "server": "ledger-http",
            "display_name": "Ledger (HTTP)",
            "description": "",
            "connected": True,
        }
    ]
    # Replaced: the next call carries the new token (the old session is closed).
    mine.put(URL, {"token": "tok-alice-2"}, format="json")
    assert bearer(user)["result"]["text"] == "Bearer tok-alice-2"
    assert mine.delete("/api/v1/mcp-connections/ledger-http/").status_code == 204
    assert bearer(user)["error"]["code"] == "tool_needs_connection"
    assert bearer(other_user)["result"]["text"] == "Bearer tok-bob"


def test_tokens_are_sealed_at_rest(personal, user):
    client(user).put(URL, {"token": "tok-secret-123"}, format="json")
    stored = McpConnection.objects.get().sealed_token
    assert "tok-secret-123" not in stored and len(stored) > 40


@pytest.mark.parametrize("token", ["", "two words", "line\\r\\nX-Evil: 1", "x" * 5000])
def test_a_token_that_is_not_one_header_value_is_refused(personal, user, token):
    answer = client(user).put(
        URL,
        json.loads(f'{{"token": "{token}"}}'),
        format="json",
    )
    assert answer.status_code == 400 and not McpConnection.objects.exists()


def test_only_per_user_servers_can_be_connected(http_server, user):
    answer = client(user).put(URL, {"token": "t"}, format="json")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "mcp_server_not_found"
    assert client(user).get("/api/v1/mcp-connections/").json() == []


def test_the_connections_page_connects_and_disconnects(personal, user, other_user):
    page = Client()
    page.force_login(user)
    listed = page.get("/connections/")
    assert b'data-connected="false"' in listed.content and b"Ledger (HTTP)" in listed.content
    done = page.post("/connections/", {"server": "ledger-http", "token": "tok-page"}, follow=True)
    assert (
        b'data-connected="true"' in done.content and b"Connected to Ledger (HTTP)." in done.content
    )
    assert bearer(user)["result"]["text"] == "Bearer tok-page"
    refused = page.post("/connections/", {"server": "ledger-http", "token": "a b"}, follow=True)
    assert b"Paste the token" in refused.content
    page.post("/connections/", {"server": "ledger-http", "action": "disconnect"})
    assert not McpConnection.objects.filter(user=user).exists()
    anonymous = Client().get("/connections/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
