"""App config for the routing policy: modes, rules, model routing with fallback, session memory."""

from django.apps import AppConfig


class RoutingConfig(AppConfig):
    """Routing policies managed in admin."""

    name = "delegation.routing"
    label = "routing"
    verbose_name = "Routing"
    default_auto_field = "django.db.models.BigAutoField"
