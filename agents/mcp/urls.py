"""Pages of MCP servers for end users."""

from django.urls import path

from agents.mcp.views import connections_page

app_name = "mcp"
urlpatterns = [path("connections/", connections_page, name="connections")]
