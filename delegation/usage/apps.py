"""App config for usage and cost."""

from django.apps import AppConfig


class UsageConfig(AppConfig):
    """Price table, usage ledger, money budgets and the reports built on the ledger."""

    name = "delegation.usage"
    label = "usage"
    verbose_name = "Usage and cost"
    default_auto_field = "django.db.models.BigAutoField"
