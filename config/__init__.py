"""Project configuration: settings, ASGI/WSGI entry points, Celery app, infrastructure seams."""

from config.celery_app import app as celery_app

__all__ = ["celery_app"]
