"""Reads of MCP servers: permission-checked fetches for the API and admin."""

from __future__ import annotations

from agents.mcp.models import McpServer, McpSync
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
