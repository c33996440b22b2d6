"""The Celery application; settings come from Django settings prefixed CELERY_."""

import os
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

from config.collector import collector_freeze_startup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("agent_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
@worker_process_init.connect
def _freeze_startup_objects(**_: Any) -> None:
    """Before the pool starts (so forked children share the pages), and in each child once it
    has initialised: what the worker loaded stays out of the collector's full collections."""
    collector_freeze_startup()
