"""App config for evals: registers the publish gate and the draft pinning of eval runs."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class EvalsConfig(AppConfig):
    """Eval suites, cases, eval runs and drafts held by the publish gate."""

    name = "delegation.evals"
    label = "evals"
    verbose_name = _("Evals")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Gate agent saves; pin drafts (and model overrides) on the experts of eval turns."""
        from agents.services import publish_gate_register
        from delegation.evals.gate import evals_publish_gate
        from delegation.evals.overrides import child_run_pin
        from delegation.runs.hooks import hooks_register

        publish_gate_register(evals_publish_gate)
        hooks_register(child_pins=child_run_pin)
