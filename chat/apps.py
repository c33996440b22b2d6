"""App config for chat: sessions, messages, events, the websocket consumer and the page."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    """Registers the chat tools once apps are ready."""

    name = "chat"
    verbose_name = _("Chat")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import (
            metrics,  # noqa: F401  (connections held open)
            tools,  # noqa: F401  (registers tools)
        )
