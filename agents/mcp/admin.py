"""Admin pages of MCP servers: define a server, sync its tools, review and accept changes."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from agents.mcp.models import (
    SERVER_EDITABLE_FIELDS,
    McpServer,
    McpSync,
    McpTool,
    SyncStatus,
    ToolStatus,
    UserIdentity,
)
from agents.mcp.services import server_changed, server_sync, sync_accept, sync_dismiss
from agents.mcp.targets import ServerUnusable, assertion_key
from config.errors import AppError


def command_choices() -> list[tuple[str, str]]:
    """The stdio commands configured in MCP_STDIO_COMMANDS, as choices ("": none)."""
    return [("", "—")] + [(name, name) for name in sorted(settings.MCP_STDIO_COMMANDS)]


class McpServerForm(forms.ModelForm):
    """A server: a stdio command is picked from MCP_STDIO_COMMANDS, never typed."""

    command = forms.ChoiceField(choices=command_choices, required=False)

    class Meta:
        model = McpServer
        fields = SERVER_EDITABLE_FIELDS
        help_texts = {
            "headers": 'Header → environment variable, e.g. {"Authorization": "MCP_ERP_TOKEN"}; '
            "the value is read from the environment when connecting and never stored.",
            "display_names": 'Per language, e.g. {"zh-hant": "財務系統", "zh-hans": "财务系统"}.',
            "url": "The streamable HTTP endpoint, e.g. http://erp-mcp:8000/mcp (staff choose it: "
            "loopback and private addresses are allowed).",
        }


class McpToolInline(admin.TabularInline):
    """The server's snapshot: read-only but for the approval override."""

    model = McpTool
    extra = 0
    can_delete = False
    # (Each row is headed by its tool key, the row's name.)
    fields = ["title", "status", "hints", "approval", "approval_now"]
    readonly_fields = ["title", "status", "hints", "approval_now"]
    verbose_name = "tool (approval: by its annotations, a tool not read-only waits for staff)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Annotations")
    def hints(self, tool: McpTool) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(tool.annotations.items())) or "—"

    @admin.display(description="Needs approval", boolean=True)
    def approval_now(self, tool: McpTool) -> bool:
        return tool.needs_approval


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    """MCP servers with their snapshot and the changes of the last sync awaiting acceptance."""

    form = McpServerForm
    list_display = [
        "name",
        "display_name",
        "transport",
        "enabled",
        "tool_count",
        "pending",
        "synced_at",
    ]
    list_filter = ["transport", "enabled", "user_identity"]
    search_fields = ["name", "display_name"]
    readonly_fields = [
        "synced_at",
        "created_at",
        "updated_at",
        "pending_changes",
        "assertion_key_shown",
    ]
    inlines = [McpToolInline]
    actions = ["sync_tools"]

    @admin.display(description="Assertion key (give it to the server's operator)")
    def assertion_key_shown(self, server: McpServer) -> str:
        """The key this server verifies user assertions with (its own, derived)."""
        if server.user_identity != UserIdentity.ASSERTION:
            return "— (not an assertion server)"
        try:
            return assertion_key(server.name)
        except ServerUnusable as exc:
            return str(exc)

    @admin.display(description="Tools")
    def tool_count(self, server: McpServer) -> int:
        return server.tools.filter(status=ToolStatus.ACTIVE).count()

    @admin.display(description="Changes waiting", boolean=True)
    def pending(self, server: McpServer) -> bool:
        return server.syncs.filter(status=SyncStatus.PENDING).exists()

    @admin.display(description="Changes waiting for acceptance")
    def pending_changes(self, server: McpServer) -> SafeString | str:
        sync = server.syncs.filter(status=SyncStatus.PENDING).first() if server.pk else None
        if sync is None:
            return "None."
        return format_html(
            '{} <a href="../../mcpsync/{}/change/">Review and accept or dismiss</a>',
            changes_html(sync),
            sync.pk,
        )

    @admin.action(description="Sync tools now (read tools/list)")
    def sync_tools(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            try:
                sync = server_sync(server=server, by=request.user)
            except AppError as exc:
                self.message_user(request, f"{server.name}: {exc.message}", messages.ERROR)
                continue
            if sync.status == SyncStatus.PENDING:
                text = f"{server.name}: the server's tools changed; review the sync to accept it."
                self.message_user(request, text, messages.WARNING)
            else:
                self.message_user(request, f"{server.name}: {len(sync.listing)} tool(s), applied.")

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        server_changed(server=obj)


def changes_html(sync: McpSync) -> SafeString:
    """A sync's changes as a short list: added, removed, and changed (which parts)."""
    rows = [
        ("Added", t["name"], t.get("description", "")[:120]) for t in sync.changes.get("added", [])
    ]
    rows += [("Removed", t["name"], "no longer listed") for t in sync.changes.get("removed", [])]
    rows += [("Changed", c["name"], ", ".join(c["parts"])) for c in sync.changes.get("changed", [])]
    if not rows:
        return format_html("{}", "No changes.")
    return format_html_join(mark_safe("<br>"), "<b>{}</b> {}: {}", rows)


@admin.register(McpSync)
class McpSyncAdmin(admin.ModelAdmin):
    """Syncs: what each read of a server changed; accept or dismiss a pending one."""

    list_display = ["server", "status", "created_at", "created_by", "decided_by"]
    list_filter = ["status", "server"]
    readonly_fields = [
        "server",
        "status",
        "summary",
        "diff",
        "created_at",
        "created_by",
        "decided_at",
        "decided_by",
    ]
    exclude = ["listing", "changes"]
    actions = ["accept", "dismiss"]

    class Media:
        css = {"all": ["mcp/admin.css"]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: McpSync, form: Any, change: bool) -> None:
        """Nothing of a sync is edited; its page's buttons accept or dismiss it."""

    def response_change(self, request: HttpRequest, obj: McpSync) -> HttpResponse:
        """The page's Accept and Dismiss buttons."""
        for button, decide, done in (
            ("_accept", sync_accept, "accepted"),
            ("_dismiss", sync_dismiss, "dismissed"),
        ):
            if button in request.POST:
                self._decide(request, McpSync.objects.filter(pk=obj.pk), decide, done)
                return redirect("admin:mcp_mcpserver_change", obj.server_id)
        return super().response_change(request, obj)

    @admin.display(description="Changes")
    def summary(self, sync: McpSync) -> SafeString:
        return changes_html(sync)

    @admin.display(description="Before and after")
    def diff(self, sync: McpSync) -> SafeString:
        changed = sync.changes.get("changed", [])
        if not changed:
            return format_html("{}", "—")
        return format_html_join(
            "",
            '<table class="mcp-diff"><caption>{}</caption><tr><th>Before</th><th>After</th></tr>'
            "<tr><td><pre>{}</pre></td><td><pre>{}</pre></td></tr></table>",
            [
                (
                    c["name"],
                    json.dumps(
                        {k: c["before"][k] for k in c["parts"]}, ensure_ascii=False, indent=1
                    ),
                    json.dumps(
                        {k: c["after"][k] for k in c["parts"]}, ensure_ascii=False, indent=1
                    ),
                )
                for c in changed
            ],
        )

    @admin.action(description="Accept the selected syncs' changes")
    def accept(self, request: HttpRequest, queryset: QuerySet[McpSync]) -> None:
        self._decide(request, queryset, sync_accept, "accepted")

    @admin.action(description="Dismiss the selected syncs (changed tools stay held)")
    def dismiss(self, request: HttpRequest, queryset: QuerySet[McpSync]) -> None:
        self._decide(request, queryset, sync_dismiss, "dismissed")

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[McpSync], decide: Any, done: str
    ) -> None:
        for sync in queryset:
            try:
                decide(sync=sync, by=request.user)
            except AppError as exc:
                self.message_user(request, f"{sync}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{sync.server.name}: changes {done}.")
