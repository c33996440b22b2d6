"""App config for reminders: tasks, calendar, weather and reminder tools, and reminder dispatch."""

from django.apps import AppConfig


class RemindersConfig(AppConfig):
    """Registers the planner tools once apps are ready."""

    name = "reminders"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from reminders import tools  # noqa: F401  (registers tools)
        from reminders.offline_rules import rules_attach

        rules_attach()
