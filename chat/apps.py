"""App config for chat: sessions, messages, events, the websocket consumer and the page."""

from django.apps import AppConfig


class ChatConfig(AppConfig):
    """Registers the chat tools once apps are ready."""

    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat import tools  # noqa: F401  (registers tools)
