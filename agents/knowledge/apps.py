"""App config for knowledge bases."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class KnowledgeConfig(AppConfig):
    """Registers the kb_search and kb_documents tools once apps are ready."""

    name = "agents.knowledge"
    label = "knowledge"
    verbose_name = _("Knowledge")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.knowledge import tools  # noqa: F401  (registers tools)
        from agents.knowledge.offline_rules import KNOWLEDGE_RULES
        from agents.registry import offline_rule_set

        # "The latest file" before the planner's and built-ins' rules; a knowledge search
        # (which fires on any question) after them.
        for key, rule in KNOWLEDGE_RULES.items():
            offline_rule_set(key, rule, priority=50 if key == "kb_documents" else 260)
