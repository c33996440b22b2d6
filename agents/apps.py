"""App config for agents: definitions, the tool registry and model providers."""

from importlib import import_module

from django.apps import AppConfig
from django.conf import settings
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    """Registers the built-in tools once apps are ready."""

    name = "agents"
    verbose_name = _("Agents")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.tools import builtin, mail, web  # noqa: F401  (registers tools)

        # The openai SDK is imported where it is used (0.9 s). When agents default to an
        # OpenAI-compatible server, import it now, so the first turn does not pay for it.
        if settings.DEFAULT_MODEL_PROVIDER == "openai":
            import_module("openai")
