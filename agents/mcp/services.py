"""Writes of MCP servers: syncing a server's tool listing, and accepting or dismissing it."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.mcp.client import McpFailure, session_close, tools_list
from agents.mcp.models import McpConnection, McpServer, McpSync, McpTool, SyncStatus, ToolStatus
from agents.mcp.sealing import token_seal
from agents.mcp.snapshot import NAME_MAX, changes_between, function_name, snapshot_of
from agents.mcp.targets import ServerUnusable, target_for
from config.errors import AppError


def server_sync(*, server: McpServer, by: Any = None) -> McpSync:
    """Read the server's tools/list and compare it with the snapshot. The first sync applies
    at once; a later one with changes waits for an admin (`sync_accept`), and meanwhile holds
    back every tool whose definition changed or that the server no longer lists."""
    try:
        listed = tools_list(target_for(server), timeout=server.call_timeout)
    except (McpFailure, ServerUnusable) as exc:
        raise AppError("mcp_unavailable", str(exc), status=502) from exc
    listing = [snapshot_of(tool) for tool in listed if len(tool.name) <= NAME_MAX]
    with transaction.atomic():
        server = McpServer.objects.select_for_update().get(pk=server.pk)
        first = not server.syncs.filter(status=SyncStatus.APPLIED).exists()
        changes = changes_between(_snapshot(server), listing)
        server.syncs.filter(status=SyncStatus.PENDING).update(status=SyncStatus.SUPERSEDED)
        pending = not first and any(changes.values())
        sync = McpSync.objects.create(
            server=server,
            listing=listing,
            changes=changes,
            status=SyncStatus.PENDING if pending else SyncStatus.APPLIED,
            created_by=by if by is not None and by.is_authenticated else None,
        )
        if pending:
            held = [c["name"] for c in changes["changed"]] + [t["name"] for t in changes["removed"]]
            server.tools.filter(name__in=held).update(status=ToolStatus.HELD)
        else:
            _apply(server, sync, by)
        server.synced_at = timezone.now()
        server.save(update_fields=["synced_at"])
    return sync


def sync_accept(*, sync: McpSync, by: Any) -> McpSync:
    """Apply a waiting sync's listing to the snapshot: new tools appear, changed ones take
    their new definition and are offered again, removed ones are gone."""
    with transaction.atomic():
        sync = McpSync.objects.select_for_update().select_related("server").get(pk=sync.pk)
        if sync.status != SyncStatus.PENDING:
            status = sync.get_status_display().lower()
            message = _("This sync is %(status)s.") % {"status": status}
            raise AppError("conflict", message, status=409)
        _apply(sync.server, sync, by)
    return sync


def sync_dismiss(*, sync: McpSync, by: Any) -> McpSync:
    """Leave the snapshot as it is; tools the sync held back stay held until a sync is
    accepted (the server changed them: calling them as before would be a guess)."""
    with transaction.atomic():
        sync = McpSync.objects.select_for_update().get(pk=sync.pk)
        if sync.status != SyncStatus.PENDING:
            status = sync.get_status_display().lower()
            message = _("This sync is %(status)s.") % {"status": status}
            raise AppError("conflict", message, status=409)
        sync.status, sync.decided_at, sync.decided_by = SyncStatus.DISMISSED, timezone.now(), by
        sync.save(update_fields=["status", "decided_at", "decided_by"])
    return sync


def server_changed(*, server: McpServer) -> None:
    """After an admin changed a server: its open sessions close (the next call reconnects)."""
    transaction.on_commit(lambda: session_close(server.name))


def _snapshot(server: McpServer) -> list[dict[str, Any]]:
    """The server's snapshot as a listing (tools not removed), to compare a new one with."""
    return [
        {
            "name": t.name,
            "title": t.title,
            "description": t.description,
            "input_schema": t.input_schema,
            "annotations": t.annotations,
            "hash": t.definition_hash,
        }
        for t in server.tools.exclude(status=ToolStatus.REMOVED)
    ]


def _apply(server: McpServer, sync: McpSync, by: Any) -> None:
    """Make the sync's listing the snapshot (inside the caller's transaction)."""
    existing = {t.name: t for t in server.tools.all()}
    taken = set(McpTool.objects.values_list("function_name", flat=True))
    for entry in sync.listing:
        tool = existing.pop(entry["name"], None) or McpTool(server=server, name=entry["name"])
        if not tool.function_name:
            tool.function_name = function_name(server.name, entry["name"], taken)
        taken.add(tool.function_name)
        tool.title, tool.description = entry["title"], entry["description"]
        tool.input_schema, tool.annotations = entry["input_schema"], entry["annotations"]
        tool.definition_hash, tool.status = entry["hash"], ToolStatus.ACTIVE
        tool.save()
    McpTool.objects.filter(pk__in=[t.pk for t in existing.values()]).update(
        status=ToolStatus.REMOVED
    )
    sync.status = SyncStatus.APPLIED
    sync.decided_at = timezone.now()
    sync.decided_by = by if by is not None and getattr(by, "is_authenticated", False) else None
    sync.save(update_fields=["status", "decided_at", "decided_by"])


TOKEN_CHARS = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: a header value, no spaces or lines


def connection_save(*, server: McpServer, user: Any, token: str) -> McpConnection:
    """Connect the user's own account to a per-user server: their token, sealed; it replaces
    an earlier one, and the sessions opened with that one close."""
    token = token.strip()
    if not token or len(token) > settings.MCP_TOKEN_MAX_CHARS or not TOKEN_CHARS.match(token):
        raise AppError(
            "invalid",
            _("Paste the token as the service gave it: one line of visible characters."),
            details={"token": ["invalid"]},
        )
    connection, _created = McpConnection.objects.update_or_create(
        server=server, user=user, defaults={"sealed_token": token_seal(token)}
    )
    _user_sessions_close(server, user)
    return connection


def connection_delete(*, server: McpServer, user: Any) -> bool:
    """Forget the user's token for the server (their calls fail until they connect again)."""
    deleted, _rows = McpConnection.objects.filter(server=server, user=user).delete()
    _user_sessions_close(server, user)
    return bool(deleted)


def _user_sessions_close(server: McpServer, user: Any) -> None:
    """After the commit, close this user's sessions to the server (theirs only)."""
    name, identity = server.name, f"{user.pk}:"
    transaction.on_commit(lambda: session_close(name, identity))
