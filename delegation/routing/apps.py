"""App config for the routing policy: modes, rules, model routing with fallback, session memory."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RoutingConfig(AppConfig):
    """Routing policies managed in admin."""

    name = "delegation.routing"
    label = "routing"
    verbose_name = _("Routing")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register routing's hooks in the run engine: a turn's session memory, its mode on
        the turn's `run.completed` event, and the statistics (an expert's end, a refusal, a
        rating in chat)."""
        from chat.feedback import RATING_LISTENERS
        from delegation.routing.services import route_after_turn_hook, turn_mode_data
        from delegation.routing.stats import (
            delegation_counted,
            rating_counted,
            refusal_counted,
            turn_pin,
        )
        from delegation.runs.hooks import hooks_register

        hooks_register(
            turn_succeeded=route_after_turn_hook,
            completed_data=turn_mode_data,
            child_pins=turn_pin,
            run_finished=delegation_counted,
            delegation_refused=refusal_counted,
        )
        if rating_counted not in RATING_LISTENERS:
            RATING_LISTENERS.append(rating_counted)
