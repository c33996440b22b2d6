"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path
from django.utils.translation import gettext_lazy as _
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.metrics import metrics_view

# The admin's header and title in the admin's language (Django's default reads "Django …").
admin.site.site_header = _("Agent platform administration")
admin.site.site_title = _("Agent platform admin")
admin.site.index_title = _("Administration")

urlpatterns = [
    # Prometheus' scrape by a staff member's session (with METRICS_TOKEN, and the probes
    # /healthz and /readyz: config.health.probes_middleware, before any other).
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("api/openai/v1/", include("chat.interop.urls")),  # OpenAI-compatible (docs/interop.md)
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view loads its init script from a URL: no inline script, so the CSP holds.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/", include("mozilla_django_oidc.urls")),  # SSO sign-in (config/oidc.py)
    path("voice/", include("chat.voice.urls")),  # the chat page's voice (docs/voice.md)
    path("", include("agents.mcp.urls")),
    path("", include("reminders.urls")),
    path("", include("reminders.watches.urls")),
    path("", include("chat.channels.urls")),  # LINE / Slack webhooks, link pages
    path("", include("chat.urls")),
]
