"""App config for reminders: tasks, calendar, weather and reminder tools, and reminder dispatch."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RemindersConfig(AppConfig):
    """Registers the planner tools once apps are ready."""

    name = "reminders"
    verbose_name = _("Reminders")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from delegation.runs.hooks import hooks_register
        from reminders import (
            metrics,  # noqa: F401  (dispatch counts, pending reminders)
            tools,  # noqa: F401  (registers tools)
        )
        from reminders.offline_rules import rules_attach
        from reminders.schedule_mail import scheduled_mail_after_turn

        rules_attach()
        hooks_register(turn_ended=scheduled_mail_after_turn)  # schedules' answers by mail
