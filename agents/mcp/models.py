"""MCP servers an admin connects, the snapshot of each one's tools, and the syncs that read them.

Runs offer the snapshot, never a live listing: a server cannot change what a model is offered
behind the admin's back. A sync that finds changes waits for an admin to accept them; until
then a tool whose definition changed (or vanished) is held back from every agent.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.mcp.snapshot import needs_approval as annotations_need_approval
from agents.mcp.validation import server_validate, validate_display_names, validate_headers
from agents.models import validate_server_url
from agents.names import text_in

validate_server_name = RegexValidator(
    r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$",
    _(
        "Lowercase letters, digits and single hyphens inside, at most 40 characters, "
        "e.g. finance-erp."
    ),
)


class Transport(models.TextChoices):
    """How the platform talks to a server."""

    HTTP = "http", _("Streamable HTTP")
    STDIO = "stdio", _("stdio (a command from MCP_STDIO_COMMANDS)")


class UserIdentity(models.TextChoices):
    """Whose rights a server's calls carry."""

    SERVER = "server", _("The server's own credentials (its headers)")
    ASSERTION = "assertion", _("Per user: a signed assertion of the end user in a header")
    TOKEN = "token", _("Per user: each user's own token, connected once on their connections page")


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

    name = models.CharField(
        verbose_name=_("name"), max_length=40, unique=True, validators=[validate_server_name]
    )
    display_name = models.CharField(verbose_name=_("display name"), max_length=120)
    # Per language ("en", "zh-hant", "zh-hans"): the name people read, where it differs.
    display_names = models.JSONField(
        verbose_name=_("display names"),
        default=dict,
        blank=True,
        validators=[validate_display_names],
    )
    description = models.TextField(verbose_name=_("description"), blank=True)
    transport = models.CharField(
        verbose_name=_("transport"), max_length=8, choices=Transport.choices, default=Transport.HTTP
    )
    url = models.CharField(
        verbose_name=_("URL"), max_length=500, blank=True, validators=[validate_server_url]
    )
    command = models.CharField(  # a name in settings.MCP_STDIO_COMMANDS, never a command line
        verbose_name=_("command"), max_length=64, blank=True
    )
    # {"Authorization": "MCP_ERP_TOKEN"}: each header's value is read from that environment
    # variable when connecting; the secret itself is never stored.
    headers = models.JSONField(
        verbose_name=_("headers"), default=dict, blank=True, validators=[validate_headers]
    )
    connect_timeout = models.FloatField(
        verbose_name=_("connect timeout"),
        default=connect_timeout_default,
        validators=[MinValueValidator(0.1)],
        help_text=_("Seconds."),
    )
    call_timeout = models.FloatField(
        verbose_name=_("call timeout"),
        default=call_timeout_default,
        validators=[MinValueValidator(0.1)],
        help_text=_("Seconds per tool call."),
    )
    user_identity = models.CharField(
        verbose_name=_("user identity"),
        max_length=10,
        choices=UserIdentity.choices,
        default=UserIdentity.SERVER,
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    synced_at = models.DateTimeField(verbose_name=_("synced at"), null=True, blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name_plural = _("MCP servers")
        ordering = ["name"]
        verbose_name = _("MCP server")

    def __str__(self) -> str:
        return f"{self.display_name} ({self.name})"

    def name_in(self, language: str | None) -> str:
        """What people read in `language` ("zh-hant", …): its own name there, else the other
        Chinese script's converted, else the display name."""
        return text_in(self.display_names, self.display_name, language)

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

    ACTIVE = "active", _("Active")
    HELD = "held", _("Held: changed on the server, waiting for an admin")
    REMOVED = "removed", _("Removed from the server")


class Approval(models.TextChoices):
    """Whether each call of a tool waits for a staff member's approval."""

    DEFAULT = "default", _("By its annotations")
    ALWAYS = "always", _("Always")
    NEVER = "never", _("Never")


class McpTool(models.Model):
    """One tool of a server as last accepted: what a model is offered and calls."""

    server = models.ForeignKey(
        McpServer, verbose_name=_("server"), on_delete=models.CASCADE, related_name="tools"
    )
    name = models.CharField(verbose_name=_("name"), max_length=128)  # the server's own name for it
    function_name = models.CharField(
        verbose_name=_("function name"), max_length=64, unique=True
    )  # mcp__<server>__<tool>
    title = models.CharField(verbose_name=_("title"), max_length=200, blank=True)
    description = models.TextField(verbose_name=_("description"), blank=True)
    input_schema = models.JSONField(verbose_name=_("input schema"), default=dict)
    annotations = models.JSONField(verbose_name=_("annotations"), default=dict, blank=True)
    definition_hash = models.CharField(verbose_name=_("definition hash"), max_length=64)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=8,
        choices=ToolStatus.choices,
        default=ToolStatus.ACTIVE,
    )
    approval = models.CharField(
        verbose_name=_("approval"), max_length=8, choices=Approval.choices, default=Approval.DEFAULT
    )
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name_plural = _("MCP tools")
        ordering = ["server__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="mcp_one_tool_per_name")
        ]
        verbose_name = _("MCP tool")

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

    APPLIED = "applied", _("Applied")
    PENDING = "pending", _("Waiting for an admin to accept")
    SUPERSEDED = "superseded", _("Superseded by a later sync")
    DISMISSED = "dismissed", _("Dismissed")


class McpSync(models.Model):
    """One read of a server's `tools/list`: the listing, what it changes, and its fate."""

    server = models.ForeignKey(
        McpServer, verbose_name=_("server"), on_delete=models.CASCADE, related_name="syncs"
    )
    listing = models.JSONField(
        verbose_name=_("listing"), default=list
    )  # the tools as read, in snapshot form
    changes = models.JSONField(
        verbose_name=_("changes"), default=dict
    )  # {"added": [...], "removed": [...], "changed": [...]}
    status = models.CharField(verbose_name=_("status"), max_length=10, choices=SyncStatus.choices)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(verbose_name=_("decided at"), null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("decided by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        verbose_name_plural = _("MCP syncs")
        ordering = ["-created_at"]
        verbose_name = _("MCP sync")

    def __str__(self) -> str:
        return gettext("%(server)s sync %(when)s (%(status)s)") % {
            "server": self.server.name,
            "when": f"{self.created_at:%Y-%m-%d %H:%M}",
            "status": self.get_status_display(),
        }

    @property
    def has_changes(self) -> bool:
        """Whether the listing differs from the snapshot it was compared with."""
        return any(self.changes.get(k) for k in ("added", "removed", "changed"))


class McpConnection(models.Model):
    """One user's own credential for a per-user server ("token" identity), sealed at rest: the
    server's calls for that user carry it, and nobody else's calls ever do."""

    server = models.ForeignKey(
        McpServer, verbose_name=_("server"), on_delete=models.CASCADE, related_name="connections"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="mcp_connections",
    )
    sealed_token = models.TextField(
        verbose_name=_("sealed token")
    )  # agents.mcp.sealing: encrypted, never shown again
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name_plural = _("MCP connections")
        constraints = [
            models.UniqueConstraint(fields=["server", "user"], name="mcp_one_connection_per_user")
        ]
        verbose_name = _("MCP connection")

    def __str__(self) -> str:
        return f"{self.user} → {self.server.name}"
