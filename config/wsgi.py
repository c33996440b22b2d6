"""WSGI entry point (plain HTTP only; websockets need config.asgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from config.telemetry import telemetry_setup  # noqa: E402

telemetry_setup("agent-platform-web")  # before the middleware loads: Django's is traced too
application = get_wsgi_application()
