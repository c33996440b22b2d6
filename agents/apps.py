"""App config for agents: definitions, the tool registry and model providers."""

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Registers the built-in tools once apps are ready."""

    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.tools import builtin  # noqa: F401  (registers tools)
