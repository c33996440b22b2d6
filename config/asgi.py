"""ASGI entry point: HTTP through Django, websockets through Channels with auth + origin checks."""

import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from config.telemetry import telemetry_setup  # noqa: E402

telemetry_setup("agent-platform-web")  # before the middleware loads: Django's is traced too
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs apps loaded)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

import chat.routing  # noqa: E402
from agents.knowledge.sweeper import documents_recover_orphans  # noqa: E402
from chat.channels.sweeper import channels_sweep  # noqa: E402
from chat.interop.a2a_app import a2a_mounted  # noqa: E402
from chat.interop.demo_translator import translator_mounted  # noqa: E402
from chat.interop.mcp_endpoint import mcp_mounted  # noqa: E402
from config.collector import collector_freeze_startup  # noqa: E402
from config.periodic import start_in_process_beat  # noqa: E402
from delegation.sweeper import runs_recover_orphans, runs_sweep  # noqa: E402
from reminders.dispatch import reminders_dispatch  # noqa: E402
from reminders.watches.checks import watches_tick  # noqa: E402

# With no broker there is no Celery beat: the server process runs the periodic jobs itself.
start_in_process_beat(
    [
        (settings.SWEEP_INTERVAL_SECONDS, runs_sweep),
        (settings.REMINDER_DISPATCH_SECONDS, reminders_dispatch),
        (settings.SWEEP_INTERVAL_SECONDS, channels_sweep),
        (settings.WATCH_TICK_SECONDS, watches_tick),
    ],
    # This process is the only worker: what the one before it left goes first. (Documents are
    # swept only then: nothing can stop an indexing thread, so a long one is never lost.)
    at_start=[runs_recover_orphans, documents_recover_orphans],
)

application = ProtocolTypeRouter(
    {
        # /mcp/: the MCP endpoint, /a2a/: the A2A server, /demo/a2a/: the demo's remote agent
        "http": translator_mounted(a2a_mounted(mcp_mounted(django_asgi_app))),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(chat.routing.websocket_urlpatterns))
        ),
    }
)
collector_freeze_startup()  # last: everything loaded so far lives as long as the process
