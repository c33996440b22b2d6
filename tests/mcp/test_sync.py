"""Syncing an MCP server: the first listing applies, later changes wait for an admin and hold
back changed tools, runs offer only the accepted snapshot; the REST API is staff only."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.mcp.models import McpSync, McpTool, SyncStatus, ToolStatus
from agents.mcp.services import server_sync, sync_accept, sync_dismiss
from agents.registry import get_tool, key_problems, tools_for
from agents.services import agent_save
from tests.factories import grant, make_agent, make_user, model_perms
from tests.humans.helpers import client
from tests.mcp.conftest import stdio_command

pytestmark = pytest.mark.django_db


def variant_two(settings, ledger_log) -> None:
    """The server's next release: `add` takes a third argument, `multiply` is new, `shout` gone."""
    settings.MCP_STDIO_COMMANDS = {"test-ledger": stdio_command(ledger_log, variant=2)}


def test_the_first_sync_applies_at_once_and_its_tools_join_the_registry(stdio_server, user):
    sync = server_sync(server=stdio_server)
    assert sync.status == SyncStatus.APPLIED and len(sync.changes["added"]) == len(sync.listing)
    add = McpTool.objects.get(server=stdio_server, name="add")
    assert (add.key, add.function_name, add.status) == (
        "mcp.ledger.add",
        "mcp__ledger__add",
        "active",
    )
    assert add.input_schema["required"] == ["a", "b"] and add.annotations == {"readOnlyHint": True}
    tool = get_tool("mcp.ledger.add")
    assert tool is not None and tool.name == "mcp__ledger__add" and not tool.side_effect
    assert tool.openai_schema()["function"]["name"] == "mcp__ledger__add"
    record = get_tool("mcp.ledger.record")
    assert record.side_effect and record.approval and not record.safe_to_repeat
    keys = ["mcp.ledger.add", "mcp.ledger.nope", "calculate"]
    assert [t.key for t in tools_for(keys, user)] == ["mcp.ledger.add", "calculate"]


def test_a_changed_server_holds_changed_tools_until_an_admin_accepts(
    stdio_server, settings, ledger_log, user, admin_user
):
    server_sync(server=stdio_server)
    variant_two(settings, ledger_log)
    sync = server_sync(server=stdio_server, by=admin_user)
    assert sync.status == SyncStatus.PENDING
    assert [t["name"] for t in sync.changes["added"]] == ["multiply"]
    assert [t["name"] for t in sync.changes["removed"]] == ["shout"]
    assert [(c["name"], c["parts"]) for c in sync.changes["changed"]] == [
        ("add", ["description", "input_schema"])
    ]
    # Until accepted: the changed and the vanished tool are offered to no agent, the new one
    # not yet; the rest as before. Runs read the snapshot, not the server.
    keys = ["mcp.ledger.add", "mcp.ledger.shout", "mcp.ledger.multiply", "mcp.ledger.lookup"]
    assert [t.key for t in tools_for(keys, user)] == ["mcp.ledger.lookup"]
    problems = key_problems(keys)
    assert "admin must accept" in problems["mcp.ledger.add"]
    assert problems["mcp.ledger.multiply"] == "unknown"
    sync_accept(sync=sync, by=admin_user)
    assert [t.key for t in tools_for(keys, user)] == [
        "mcp.ledger.add",
        "mcp.ledger.multiply",
        "mcp.ledger.lookup",
    ]
    assert McpTool.objects.get(name="shout").status == ToolStatus.REMOVED
    assert "c" in get_tool("mcp.ledger.add").parameters["properties"]
    sync.refresh_from_db()
    assert (sync.status, sync.decided_by) == (SyncStatus.APPLIED, admin_user)


def test_a_dismissed_sync_keeps_changed_tools_held_and_a_sync_without_changes_applies(
    stdio_server, settings, ledger_log, admin_user
):
    server_sync(server=stdio_server)
    again = server_sync(server=stdio_server)
    assert again.status == SyncStatus.APPLIED and not again.has_changes
    variant_two(settings, ledger_log)
    pending = server_sync(server=stdio_server)
    sync_dismiss(sync=pending, by=admin_user)
    assert get_tool("mcp.ledger.add") is None
    assert McpTool.objects.get(name="add").status == ToolStatus.HELD
    # A newer sync supersedes a pending one.
    first = server_sync(server=stdio_server)
    second = server_sync(server=stdio_server)
    first.refresh_from_db()
    assert (first.status, second.status) == (SyncStatus.SUPERSEDED, SyncStatus.PENDING)


def test_an_agent_cannot_be_given_an_unknown_or_held_tool(
    stdio_server, settings, ledger_log, admin_user
):
    server_sync(server=stdio_server)
    agent = make_agent("finance")
    agent_save(agent=agent, data={"tool_keys": ["mcp.ledger.add"]}, user=admin_user)
    with pytest.raises(ValidationError, match="mcp.ledger.nothing"):
        agent_save(agent=agent, data={"tool_keys": ["mcp.ledger.nothing"]}, user=admin_user)
    variant_two(settings, ledger_log)
    server_sync(server=stdio_server)
    with pytest.raises(ValidationError, match="admin must accept"):
        agent_save(
            agent=agent,
            data={"tool_keys": ["mcp.ledger.lookup", "mcp.ledger.shout"]},
            user=admin_user,
        )
    # A held tool the agent already lists does not block other edits (it is skipped at run time).
    agent.refresh_from_db()
    assert agent.tool_keys == ["mcp.ledger.add"]
    agent_save(agent=agent, data={"description": "Finance"}, user=admin_user)


def test_an_unreachable_server_fails_its_sync_with_a_clear_error(db, admin_user):
    api = client(admin_user)
    made = api.post(
        "/api/v1/mcp-servers/",
        {
            "name": "gone",
            "display_name": "Gone",
            "transport": "http",
            "url": "http://127.0.0.1:9/mcp",
            "connect_timeout": 2,
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    answer = api.post("/api/v1/mcp-servers/gone/sync/")
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "mcp_unavailable"
    assert not McpSync.objects.exists()


def test_the_rest_api_syncs_lists_and_accepts_for_staff_only(
    stdio_server, settings, ledger_log, user
):
    outsider = client(user)
    assert outsider.get("/api/v1/mcp-servers/").status_code == 403
    assert outsider.post("/api/v1/mcp-servers/ledger/sync/").status_code == 403
    staff = make_user("stan", is_staff=True)
    grant(staff, *model_perms("mcp.mcpserver"))
    api = client(staff)
    assert api.post("/api/v1/mcp-servers/ledger/sync/").json()["status"] == "applied"
    tools = {t["key"]: t for t in api.get("/api/v1/mcp-servers/ledger/tools/").json()}
    assert (
        tools["mcp.ledger.record"]["needs_approval"]
        and not tools["mcp.ledger.add"]["needs_approval"]
    )
    variant_two(settings, ledger_log)
    pending = api.post("/api/v1/mcp-servers/ledger/sync/").json()
    assert pending["status"] == "pending" and pending["has_changes"]
    accepted = api.post(f"/api/v1/mcp-servers/ledger/syncs/{pending['id']}/accept/")
    assert accepted.json()["status"] == "applied"
    again = api.post(f"/api/v1/mcp-servers/ledger/syncs/{pending['id']}/accept/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    assert (
        api.get("/api/v1/mcp-servers/nope/tools/").json()["error"]["code"] == "mcp_server_not_found"
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"transport": "stdio", "command": "rm -rf /"}, "command"),
        ({"transport": "http", "url": ""}, "url"),
        (
            {
                "transport": "http",
                "url": "http://x/mcp",
                "headers": {"Authorization": "Bearer abc def"},
            },
            "headers",
        ),
        (
            {"transport": "http", "url": "http://x/mcp", "display_names": {"fr": "Finances"}},
            "display_names",
        ),
        ({"transport": "http", "url": "file:///etc/passwd"}, "url"),
        # Header values only from MCP_* variables: never the platform's own secrets.
        (
            {"transport": "http", "url": "http://x/mcp", "headers": {"X-A": "DJANGO_SECRET_KEY"}},
            "headers",
        ),
        (
            {"transport": "http", "url": "http://x/mcp", "headers": {"X-B": "DATABASE_URL"}},
            "headers",
        ),
        # A stdio server cannot act per user; assertions need their own key.
        (
            {"transport": "stdio", "command": "finance-demo", "user_identity": "token"},
            "user_identity",
        ),
        (
            {"transport": "http", "url": "http://x/mcp", "user_identity": "assertion"},
            "user_identity",
        ),
    ],
)
def test_a_server_definition_that_cannot_work_is_refused(db, admin_user, body, field):
    answer = client(admin_user).post(
        "/api/v1/mcp-servers/", {"name": "erp", "display_name": "ERP", **body}, format="json"
    )
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["error"]["details"]


def test_the_agent_form_offers_synced_tools_beside_the_built_in_ones(stdio_server, admin_client):
    server_sync(server=stdio_server)
    agent = make_agent("finance")
    page = admin_client.get(f"/admin/agents/agent/{agent.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="mcp.ledger.add"' in html and 'value="calculate"' in html
    assert "(MCP: Ledger)" in html
