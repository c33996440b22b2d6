"""App config for usage and cost."""

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save
from django.utils.translation import gettext_lazy as _


class UsageConfig(AppConfig):
    """Price table, usage ledger, money budgets and the reports built on the ledger."""

    name = "delegation.usage"
    label = "usage"
    verbose_name = _("Usage and cost")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """A saved or deleted price is used from the next call on (this process's copy)."""
        from delegation.usage.models import ModelPrice
        from delegation.usage.pricing import prices_forget

        post_save.connect(prices_forget, sender=ModelPrice, dispatch_uid="prices_forget.save")
        post_delete.connect(prices_forget, sender=ModelPrice, dispatch_uid="prices_forget.delete")
