"""REST endpoints of MCP servers (staff, by the admin's model permissions)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.mcp.models import McpServer
from agents.mcp.selectors import access_server, access_sync
from agents.mcp.serializers import McpServerSerializer, McpSyncSerializer, McpToolSerializer
from agents.mcp.services import server_changed, server_sync, sync_accept, sync_dismiss
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
