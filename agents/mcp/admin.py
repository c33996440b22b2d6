"""Admin pages of MCP servers: define a server, sync its tools, review and accept changes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

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
from config.text import joined

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise  # dev only: the stubs' name for str or lazy str


def command_choices() -> list[tuple[str, str]]:
    """The stdio commands configured in MCP_STDIO_COMMANDS, as choices ("": none)."""
    return [("", "—")] + [(name, name) for name in sorted(settings.MCP_STDIO_COMMANDS)]


class McpServerForm(forms.ModelForm):
    """A server: a stdio command is picked from MCP_STDIO_COMMANDS, never typed."""

    command = forms.ChoiceField(label=_("command"), choices=command_choices, required=False)

    class Meta:
        model = McpServer
        fields = SERVER_EDITABLE_FIELDS
        help_texts = {
            "headers": _(
                'Header → environment variable, e.g. {"Authorization": "MCP_ERP_TOKEN"}; '
                "the value is read from the environment when connecting and never stored."
            ),
            "display_names": _(
                'Per language, e.g. {"zh-hant": "財務系統", "zh-hans": "财务系统"}.'
            ),
            "url": _(
                "The streamable HTTP endpoint, e.g. http://erp-mcp:8000/mcp (staff choose it: "
                "loopback and private addresses are allowed)."
            ),
        }


class McpToolInline(admin.TabularInline):
    """The server's snapshot: read-only but for the approval override."""

    model = McpTool
    extra = 0
    can_delete = False
    # (Each row is headed by its tool key, the row's name.)
    fields = ["title", "status", "hints", "approval", "approval_now"]
    readonly_fields = ["title", "status", "hints", "approval_now"]
    verbose_name = _("tool")
    verbose_name_plural = _(
        "Tools (approval “By its annotations”: a tool that is not read-only waits for staff)"
    )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("Annotations"))
    def hints(self, tool: McpTool) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(tool.annotations.items())) or "—"

    @admin.display(description=_("Needs approval"), boolean=True)
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

    @admin.display(description=_("Assertion key (give it to the server's operator)"))
    def assertion_key_shown(self, server: McpServer) -> str:
        """The key this server verifies user assertions with (its own, derived)."""
        if server.user_identity != UserIdentity.ASSERTION:
            return gettext("— (not an assertion server)")
        try:
            return assertion_key(server.name)
        except ServerUnusable as exc:
            return str(exc)

    @admin.display(description=_("Tools"))
    def tool_count(self, server: McpServer) -> int:
        return server.tools.filter(status=ToolStatus.ACTIVE).count()

    @admin.display(description=_("Changes waiting"), boolean=True)
    def pending(self, server: McpServer) -> bool:
        return server.syncs.filter(status=SyncStatus.PENDING).exists()

    @admin.display(description=_("Changes waiting for acceptance"))
    def pending_changes(self, server: McpServer) -> SafeString | str:
        sync = server.syncs.filter(status=SyncStatus.PENDING).first() if server.pk else None
        if sync is None:
            return gettext("None.")
        return format_html(
            '{} <a href="{}">{}</a>',
            changes_html(sync),
            reverse("admin:mcp_mcpsync_change", args=[sync.pk]),
            gettext("Review and accept or dismiss"),
        )

    @admin.action(description=_("Sync tools now (read tools/list)"))
    def sync_tools(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            try:
                sync = server_sync(server=server, by=request.user)
            except AppError as exc:
                text = gettext("%(server)s: %(error)s") % {
                    "server": server.name,
                    "error": exc.message,
                }
                self.message_user(request, text, messages.ERROR)
                continue
            if sync.status == SyncStatus.PENDING:
                text = gettext(
                    "%(server)s: the server's tools changed; review the sync to accept it."
                ) % {"server": server.name}
                self.message_user(request, text, messages.WARNING)
            else:
                count = len(sync.listing)
                text = ngettext(
                    "%(server)s: %(count)d tool, applied.",
                    "%(server)s: %(count)d tools, applied.",
                    count,
                ) % {"server": server.name, "count": count}
                self.message_user(request, text)

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        server_changed(server=obj)


# The parts of a tool's definition a sync compares (agents.mcp.snapshot.changes_between).
PART_LABELS = {
    "description": _("description"),
    "input_schema": _("input schema"),
    "annotations": _("annotations"),
}


def changes_html(sync: McpSync) -> SafeString:
    """A sync's changes as a short list: added, removed, and changed (which parts)."""
    added, removed, changed = gettext("Added"), gettext("Removed"), gettext("Changed")
    gone = gettext("no longer listed")
    changes = sync.changes
    rows = [(added, t["name"], t.get("description", "")[:120]) for t in changes.get("added", [])]
    rows += [(removed, t["name"], gone) for t in changes.get("removed", [])]
    rows += [
        (changed, c["name"], joined([part_label(part) for part in c["parts"]]))
        for c in changes.get("changed", [])
    ]
    if not rows:
        return format_html("{}", gettext("No changes."))
    return format_html_join(
        mark_safe("<br>"),
        "<b>{}</b> {}",
        [
            (kind, gettext("%(tool)s: %(what)s") % {"tool": tool, "what": what})
            for kind, tool, what in rows
        ],
    )


def part_label(part: str) -> str:
    """A changed part of a tool's definition ("input_schema") in the admin's words."""
    return str(PART_LABELS.get(part, part))


# What deciding a sync tells the admin, per server.
ACCEPTED = _("%(server)s: changes accepted.")
DISMISSED = _("%(server)s: changes dismissed.")


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
            ("_accept", sync_accept, ACCEPTED),
            ("_dismiss", sync_dismiss, DISMISSED),
        ):
            if button in request.POST:
                self._decide(request, McpSync.objects.filter(pk=obj.pk), decide, done)
                return redirect("admin:mcp_mcpserver_change", obj.server_id)
        return super().response_change(request, obj)

    @admin.display(description=_("Changes"))
    def summary(self, sync: McpSync) -> SafeString:
        return changes_html(sync)

    @admin.display(description=_("Before and after"))
    def diff(self, sync: McpSync) -> SafeString:
        changed = sync.changes.get("changed", [])
        if not changed:
            return format_html("{}", "—")
        before, after = gettext("Before"), gettext("After")
        return format_html_join(
            "",
            '<table class="mcp-diff"><caption>{}</caption><tr><th>{}</th><th>{}</th></tr>'
            "<tr><td><pre>{}</pre></td><td><pre>{}</pre></td></tr></table>",
            [
                (
                    c["name"],
                    before,
                    after,
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

    @admin.action(description=_("Accept the selected syncs' changes"))
    def accept(self, request: HttpRequest, queryset: QuerySet[McpSync]) -> None:
        self._decide(request, queryset, sync_accept, ACCEPTED)

    @admin.action(description=_("Dismiss the selected syncs (changed tools stay held)"))
    def dismiss(self, request: HttpRequest, queryset: QuerySet[McpSync]) -> None:
        self._decide(request, queryset, sync_dismiss, DISMISSED)

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[McpSync], decide: Any, done: StrOrPromise
    ) -> None:
        for sync in queryset:
            try:
                decide(sync=sync, by=request.user)
            except AppError as exc:
                text = gettext("%(server)s: %(error)s") % {"server": sync, "error": exc.message}
                self.message_user(request, text, messages.ERROR)
            else:
                self.message_user(request, str(done) % {"server": sync.server.name})
