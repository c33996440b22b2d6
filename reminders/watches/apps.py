"""App config of watches: experts that check on a schedule and speak up when they find something."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WatchesConfig(AppConfig):
    """Plugs the check's end into the engine and the finding format into the offline model."""

    name = "reminders.watches"
    label = "watches"
    verbose_name = _("Watches")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.registry import offline_answerer_add
        from delegation.runs.hooks import hooks_register
        from reminders.watches.checks import check_after_turn
        from reminders.watches.findings import offline_finding

        hooks_register(turn_ended=check_after_turn)
        offline_answerer_add(offline_finding)
