"""The Celery application; settings come from Django settings prefixed CELERY_."""

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init, worker_process_init

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


@task_prerun.connect
@task_postrun.connect
def _connections_kept_as_django_keeps_them(sender: Any = None, **_: Any) -> None:
    """Around each task, close the database connections Django would close between two
    requests (older than CONN_MAX_AGE, or unusable after an error): the rest are reused by the
    next task (settings.CELERY_DB_REUSE_MAX keeps Celery from closing them all). An eager task
    (TASKS_RUN_SYNC) runs inside its caller's work and keeps its caller's connection."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections  # Django is set up once a task runs

    close_old_connections()
