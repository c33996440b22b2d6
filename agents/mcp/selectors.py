"""Reads of MCP servers: permission-checked fetches for the API and admin."""

from __future__ import annotations

from typing import Any

from agents.mcp.models import McpServer, McpSync, UserIdentity
from config.errors import NotFound


def access_server(name: str) -> McpServer:
    """The server with this name (staff endpoints only call this), or mcp_server_not_found."""
    server = McpServer.objects.filter(name=name).first()
    if server is None:
        raise NotFound("mcp_server")
    return server


def access_sync(server: McpServer, sync_id: int) -> McpSync:
    """One sync of the server, or mcp_sync_not_found."""
    sync = server.syncs.filter(pk=sync_id).first()
    if sync is None:
        raise NotFound("mcp_sync")
    return sync


def connectable_servers(*, user: Any) -> list[tuple[McpServer, bool]]:
    """The enabled per-user ("token") servers, each with whether this user has connected it."""
    servers = McpServer.objects.filter(enabled=True, user_identity=UserIdentity.TOKEN)
    mine = set(user.mcp_connections.values_list("server_id", flat=True))
    return [(server, server.pk in mine) for server in servers]


def access_connectable_server(name: str) -> McpServer:
    """An enabled per-user ("token") server any signed-in user may connect, or NotFound."""
    server = McpServer.objects.filter(
        name=name, enabled=True, user_identity=UserIdentity.TOKEN
    ).first()
    if server is None:
        raise NotFound("mcp_server")
    return server
