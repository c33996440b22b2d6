"""The Celery application; settings come from Django settings prefixed CELERY_."""

import os
from typing import Any

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutting_down,
)

from config.collector import collector_freeze_startup
from config.telemetry import telemetry_setup

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


@worker_init.connect
@worker_process_init.connect
def _traces(**_: Any) -> None:
    """Export traces from the worker (and each child a prefork pool starts), when configured."""
    telemetry_setup("agent-platform-worker")


@worker_ready.connect
def _consuming(**_: Any) -> None:
    """The worker consumes tasks: ready for its probe; its HTTP paths served if asked."""
    from django.conf import settings

    from config.worker_http import WorkerState, worker_http_serve

    WorkerState.consuming.set()
    if settings.WORKER_HTTP_PORT:
        worker_http_serve(settings.WORKER_HTTP_HOST, settings.WORKER_HTTP_PORT)


@worker_shutting_down.connect
def _not_consuming(**_: Any) -> None:
    """A worker shutting down takes no new task: not ready any more."""
    from config.worker_http import WorkerState

    WorkerState.consuming.clear()


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
