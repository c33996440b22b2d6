"""App config for humans in the loop: validation, reviews, the inbox, approvals, activity."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class HumansConfig(AppConfig):
    """Registers the ask_human and ask_user tools and its engine hooks once apps are ready."""

    name = "delegation.humans"
    label = "humans"
    verbose_name = _("Humans in the loop")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the question tools and the app's hooks in the run engine."""
        from delegation.humans import (
            metrics,  # noqa: F401  (people waiting, read at scrapes)
            tools,  # noqa: F401  (registers ask_human, ask_user)
        )
        from delegation.humans.engine_hooks import hooks_install

        hooks_install()
