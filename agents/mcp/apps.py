"""App config for MCP servers."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class McpConfig(AppConfig):
    """Makes the MCP tool snapshots a source of the tool registry (keys `mcp.<server>.<tool>`)."""

    name = "agents.mcp"
    label = "mcp"
    verbose_name = _("MCP servers")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.mcp.source import PREFIX, SOURCE
        from agents.registry import source_register

        source_register(PREFIX, SOURCE)
