"""App config for delegation: runs, the run engine, the delegation tree."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DelegationConfig(AppConfig):
    """Runs and their Celery tasks."""

    name = "delegation"
    verbose_name = _("Delegation")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """An ended expert reports to its caller: the tree's hook in the engine."""
        from delegation import metrics  # noqa: F401  (its instruments and readings)
        from delegation.runs.hooks import hooks_register
        from delegation.tree.report import run_report

        hooks_register(report=run_report)
