"""App config for knowledge bases."""

from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    """Registers the kb_search and kb_documents tools once apps are ready."""

    name = "agents.knowledge"
    label = "knowledge"
    verbose_name = "Knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.knowledge import tools  # noqa: F401  (registers tools)
