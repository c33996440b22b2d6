"""App config for delegation: runs, the run loop, and (later) sub-agent delegation."""

from django.apps import AppConfig


class DelegationConfig(AppConfig):
    """Runs and their Celery tasks."""

    name = "delegation"
    default_auto_field = "django.db.models.BigAutoField"
