"""REST endpoints of MCP servers (staff, by the admin's model permissions)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.mcp.models import McpServer
from agents.mcp.selectors import (
    access_connectable_server,
    access_server,
    access_sync,
    connectable_servers,
)
from agents.mcp.serializers import (
    McpConnectionSerializer,
    McpServerSerializer,
    McpSyncSerializer,
    McpTokenSerializer,
    McpToolSerializer,
)
from agents.mcp.services import (
    connection_delete,
    connection_save,
    server_changed,
    server_sync,
    sync_accept,
    sync_dismiss,
)
from config.api_errors import ERRORS
from config.permissions import ModelPermissions


class McpServerListView(APIView):
    """MCP servers: list them (mcp.view_mcpserver), add one (mcp.add_mcpserver)."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer

    @extend_schema(
        operation_id="mcp_servers_list", responses={200: McpServerSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        """Every MCP server."""
        return Response(McpServerSerializer(McpServer.objects.all(), many=True).data)

    @extend_schema(
        operation_id="mcp_servers_create",
        request=McpServerSerializer,
        responses={201: McpServerSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Add a server; sync it to read its tools."""
        serializer = McpServerSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        server = _saved(serializer)
        return Response(McpServerSerializer(server).data, status=status.HTTP_201_CREATED)


class McpServerDetailView(APIView):
    """One MCP server: read, change (mcp.change_mcpserver) or delete it."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer

    @extend_schema(
        operation_id="mcp_servers_retrieve", responses={200: McpServerSerializer, **ERRORS}
    )
    def get(self, request: Request, name: str) -> Response:
        """The server's definition."""
        return Response(McpServerSerializer(access_server(name)).data)

    @extend_schema(
        operation_id="mcp_servers_update",
        request=McpServerSerializer,
        responses={200: McpServerSerializer, **ERRORS},
    )
    def patch(self, request: Request, name: str) -> Response:
        """Change fields; open sessions to the server close and reconnect on the next call."""
        serializer = McpServerSerializer(access_server(name), data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        return Response(McpServerSerializer(_saved(serializer)).data)

    @extend_schema(operation_id="mcp_servers_destroy", responses={204: None, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        """Delete the server and its snapshot; agents listing its tools skip them."""
        server = access_server(name)
        with transaction.atomic():
            server_changed(server=server)
            server.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class McpServerSyncView(APIView):
    """Read the server's tools now (mcp.change_mcpserver)."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer
    permission_actions = {"POST": "change"}

    @extend_schema(
        operation_id="mcp_servers_sync", request=None, responses={200: McpSyncSerializer, **ERRORS}
    )
    def post(self, request: Request, name: str) -> Response:
        """List the server's tools and compare them with the snapshot: the first sync applies;
        a later one with changes is `pending` until accepted, and holds back changed tools."""
        sync = server_sync(server=access_server(name), by=request.user)
        return Response(McpSyncSerializer(sync).data)


class McpServerToolsView(APIView):
    """The server's snapshot: the tools agents may be given."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer

    @extend_schema(
        operation_id="mcp_servers_tools", responses={200: McpToolSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request, name: str) -> Response:
        """Each tool of the snapshot with its status (active, held, removed)."""
        tools = access_server(name).tools.select_related("server")
        return Response(McpToolSerializer(tools, many=True).data)


class McpServerSyncsView(APIView):
    """The server's syncs, newest first."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer

    @extend_schema(
        operation_id="mcp_servers_syncs", responses={200: McpSyncSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request, name: str) -> Response:
        """The last 50 syncs with what each changed."""
        syncs = access_server(name).syncs.all()[:50]
        return Response(McpSyncSerializer(syncs, many=True).data)


class McpSyncAcceptView(APIView):
    """Accept a pending sync's changes (mcp.change_mcpserver)."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer
    permission_actions = {"POST": "change"}

    @extend_schema(
        operation_id="mcp_syncs_accept", request=None, responses={200: McpSyncSerializer, **ERRORS}
    )
    def post(self, request: Request, name: str, sync_id: int) -> Response:
        """Apply the listing: added tools appear, changed ones are offered again."""
        sync = access_sync(access_server(name), sync_id)
        return Response(McpSyncSerializer(sync_accept(sync=sync, by=request.user)).data)


class McpSyncDismissView(APIView):
    """Dismiss a pending sync (mcp.change_mcpserver); changed tools stay held."""

    permission_classes = [ModelPermissions]
    permission_model = McpServer
    permission_actions = {"POST": "change"}

    @extend_schema(
        operation_id="mcp_syncs_dismiss", request=None, responses={200: McpSyncSerializer, **ERRORS}
    )
    def post(self, request: Request, name: str, sync_id: int) -> Response:
        """Leave the snapshot as it is."""
        sync = access_sync(access_server(name), sync_id)
        return Response(McpSyncSerializer(sync_dismiss(sync=sync, by=request.user)).data)


def _saved(serializer: McpServerSerializer) -> McpServer:
    """Save a validated server and close its open sessions (they used the old settings)."""
    with transaction.atomic():
        server = serializer.save()
        server_changed(server=server)
    return server


class McpConnectionListView(APIView):
    """The per-user servers the signed-in user may connect, and whether each is connected."""

    @extend_schema(
        operation_id="mcp_connections_list",
        responses={200: McpConnectionSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Each enabled per-user ("token") server with `connected` for this user."""
        rows = [
            {"server": server, "connected": connected}
            for server, connected in connectable_servers(user=request.user)
        ]
        return Response(McpConnectionSerializer(rows, many=True).data)


class McpConnectionDetailView(APIView):
    """Connect (PUT the token) or disconnect (DELETE) the user's own account to one server."""

    @extend_schema(
        operation_id="mcp_connections_update",
        request=McpTokenSerializer,
        responses={200: McpConnectionSerializer, **ERRORS},
    )
    def put(self, request: Request, name: str) -> Response:
        """Store the user's token for the server, sealed (it is never shown again)."""
        server = access_connectable_server(name)
        serializer = McpTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        connection_save(server=server, user=request.user, token=serializer.validated_data["token"])
        return Response(McpConnectionSerializer({"server": server, "connected": True}).data)

    @extend_schema(operation_id="mcp_connections_destroy", responses={204: None, **ERRORS})
    def delete(self, request: Request, name: str) -> Response:
        """Forget the user's token for the server."""
        connection_delete(server=access_connectable_server(name), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
