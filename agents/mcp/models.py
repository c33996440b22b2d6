"""MCP servers an admin connects, the snapshot of each one's tools, and the syncs that read them.

Runs offer the snapshot, never a live listing: a server cannot change what a model is offered
behind the admin's back. A sync that finds changes waits for an admin to accept them; until
then a tool whose definition changed (or vanished) is held back from every agent.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from agents.mcp.snapshot import needs_approval as annotations_need_approval
from agents.mcp.validation import server_validate, validate_display_names, validate_headers
from agents.models import validate_server_url

validate_server_name = RegexValidator(
    r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$",
    "Lowercase letters, digits and single hyphens inside, at most 40 characters, e.g. finance-erp.",
)


class Transport(models.TextChoices):
    """How the platform talks to a server."""

    HTTP = "http", "Streamable HTTP"
    STDIO = "stdio", "stdio (a command from MCP_STDIO_COMMANDS)"


class UserIdentity(models.TextChoices):
    """Whose rights a server's calls carry."""

    SERVER = "server", "The server's own credentials (its headers)"
    ASSERTION = "assertion", "Per user: a signed assertion of the end user in a header"
    TOKEN = "token", "Per user: each user's own token, connected once on their connections page"


# What staff set on a server (the admin form and the API edit the same fields).
SERVER_EDITABLE_FIELDS = [
    "name",
    "display_name",
    "display_names",
    "description",
    "transport",
    "url",
    "command",
    "headers",
    "connect_timeout",
    "call_timeout",
    "user_identity",
    "enabled",
]


def connect_timeout_default() -> float:
    """A new server's connect timeout (MCP_CONNECT_TIMEOUT)."""
    return float(settings.MCP_CONNECT_TIMEOUT)


def call_timeout_default() -> float:
    """A new server's per-call timeout (MCP_CALL_TIMEOUT)."""
    return float(settings.MCP_CALL_TIMEOUT)


class McpServer(models.Model):
    """One MCP server: how to reach it, with which headers, timeouts, and whose identity."""

    name = models.CharField(max_length=40, unique=True, validators=[validate_server_name])
    display_name = models.CharField(max_length=120)
    # Per language ("en", "zh-hant", "zh-hans"): the name people read, where it differs.
    display_names = models.JSONField(default=dict, blank=True, validators=[validate_display_names])
    description = models.TextField(blank=True)
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.HTTP)
    url = models.CharField(max_length=500, blank=True, validators=[validate_server_url])
    command = models.CharField(  # a name in settings.MCP_STDIO_COMMANDS, never a command line
        max_length=64, blank=True
    )
    # {"Authorization": "MCP_ERP_TOKEN"}: each header's value is read from that environment
    # variable when connecting; the secret itself is never stored.
    headers = models.JSONField(default=dict, blank=True, validators=[validate_headers])
    connect_timeout = models.FloatField(
        default=connect_timeout_default, validators=[MinValueValidator(0.1)], help_text="Seconds."
    )
    call_timeout = models.FloatField(
        default=call_timeout_default,
        validators=[MinValueValidator(0.1)],
        help_text="Seconds per tool call.",
    )
    user_identity = models.CharField(
        max_length=10, choices=UserIdentity.choices, default=UserIdentity.SERVER
    )
    enabled = models.BooleanField(default=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return f"{self.display_name} ({self.name})"

    def name_in(self, language: str | None) -> str:
        """What people read in `language` ("zh-hant", …): its own name there, else the
        display name."""
        return (self.display_names or {}).get((language or "").lower()) or self.display_name

    def clean(self) -> None:
        """Transport-specific rules (a URL for HTTP, a configured command for stdio)."""
        server_validate(
            transport=self.transport,
            url=self.url,
            command=self.command,
            user_identity=self.user_identity,
        )


class ToolStatus(models.TextChoices):
    """Whether agents may use a snapshot tool."""

    ACTIVE = "active", "Active"
    HELD = "held", "Held: changed on the server, waiting for an admin"
    REMOVED = "removed", "Removed from the server"


class Approval(models.TextChoices):
    """Whether each call of a tool waits for a staff member's approval."""

    DEFAULT = "default", "By its annotations"
    ALWAYS = "always", "Always"
    NEVER = "never", "Never"


class McpTool(models.Model):
    """One tool of a server as last accepted: what a model is offered and calls."""

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=128)  # the server's own name for it
    function_name = models.CharField(max_length=64, unique=True)  # mcp__<server>__<tool>
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict, blank=True)
    definition_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=ToolStatus.choices, default=ToolStatus.ACTIVE)
    approval = models.CharField(max_length=8, choices=Approval.choices, default=Approval.DEFAULT)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="mcp_one_tool_per_name")
        ]
        verbose_name = "MCP tool"

    def __str__(self) -> str:
        return self.key

    @property
    def key(self) -> str:
        """The registry key agents list: mcp.<server>.<tool>."""
        return f"mcp.{self.server.name}.{self.name}"

    @property
    def needs_approval(self) -> bool:
        """Whether each call waits for a staff member's approval: the admin's choice, else
        the annotations' default (not read-only, or destructive: yes)."""
        if self.approval == Approval.DEFAULT:
            return annotations_need_approval(self.annotations)
        return self.approval == Approval.ALWAYS


class SyncStatus(models.TextChoices):
    """What became of a sync's listing."""

    APPLIED = "applied", "Applied"
    PENDING = "pending", "Waiting for an admin to accept"
    SUPERSEDED = "superseded", "Superseded by a later sync"
    DISMISSED = "dismissed", "Dismissed"


class McpSync(models.Model):
    """One read of a server's `tools/list`: the listing, what it changes, and its fate."""

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="syncs")
    listing = models.JSONField(default=list)  # the tools as read, in snapshot form
    changes = models.JSONField(default=dict)  # {"added": [...], "removed": [...], "changed": [...]}
    status = models.CharField(max_length=10, choices=SyncStatus.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "MCP sync"

    def __str__(self) -> str:
        return f"{self.server.name} sync {self.created_at:%Y-%m-%d %H:%M} ({self.status})"

    @property
    def has_changes(self) -> bool:
        """Whether the listing differs from the snapshot it was compared with."""
        return any(self.changes.get(k) for k in ("added", "removed", "changed"))


class McpConnection(models.Model):
    """One user's own credential for a per-user server ("token" identity), sealed at rest: the
    server's calls for that user carry it, and nobody else's calls ever do."""

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="connections")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_connections"
    )
    sealed_token = models.TextField()  # agents.mcp.sealing: encrypted, never shown again
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["server", "user"], name="mcp_one_connection_per_user")
        ]
        verbose_name = "MCP connection"

    def __str__(self) -> str:
        return f"{self.user} → {self.server.name}"
