"""The connections page: a user connects their own account to per-user MCP servers."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from agents.mcp.models import McpServer
from agents.mcp.selectors import access_connectable_server, connectable_servers
from agents.mcp.services import connection_delete, connection_save
from config.errors import AppError


@login_required
@sensitive_post_parameters("token")
@require_http_methods(["GET", "POST"])
def connections_page(request: HttpRequest) -> HttpResponse:
    """List the servers that act with each person's own account; connect or disconnect one."""
    if request.method == "POST":
        try:
            server = access_connectable_server(request.POST.get("server", ""))
            if request.POST.get("action") == "disconnect":
                connection_delete(server=server, user=request.user)
                messages.success(request, _("Disconnected from %(server)s.") % _named(server))
            else:
                token = request.POST.get("token", "")
                connection_save(server=server, user=request.user, token=token)
                messages.success(request, _("Connected to %(server)s.") % _named(server))
        except AppError as exc:
            messages.error(request, exc.message)
        return redirect("mcp:connections")
    language = get_language()
    servers = [
        (server, connected, server.name_in(language))
        for server, connected in connectable_servers(user=request.user)
    ]
    return render(request, "mcp/connections.html", {"servers": servers})


def _named(server: McpServer) -> dict[str, str]:
    return {"server": server.name_in(get_language())}
