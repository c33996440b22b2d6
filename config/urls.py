"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view loads its init script from a URL: no inline script, so the CSP holds.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("agents.mcp.urls")),
    path("", include("reminders.urls")),
    path("", include("chat.urls")),
]
