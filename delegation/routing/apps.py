"""App config for the routing policy: modes, rules, model routing with fallback, session memory."""

from django.apps import AppConfig


class RoutingConfig(AppConfig):
    """Routing policies managed in admin."""

    name = "delegation.routing"
    label = "routing"
    verbose_name = "Routing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register routing's hooks in the run engine: a turn's session memory, and its mode
        on the turn's `run.completed` event."""
        from delegation.routing.selectors import mode_of
        from delegation.routing.services import route_after_turn
        from delegation.runs.hooks import hooks_register

        hooks_register(
            turn_succeeded=lambda run: route_after_turn(run=run),
            completed_data=lambda run: {"mode": mode_of(run)},
        )
