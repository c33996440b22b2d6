"""REST shapes of MCP servers, their snapshot tools and syncs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from agents.mcp.models import SERVER_EDITABLE_FIELDS, McpServer, McpSync, McpTool
from agents.mcp.validation import server_validate
from config.api_fields import StrictCharField, StrictModelSerializer


class McpServerSerializer(StrictModelSerializer):
    """A server as staff define it (header values are environment variable names)."""

    class Meta:
        model = McpServer
        fields = [*SERVER_EDITABLE_FIELDS, "synced_at", "created_at", "updated_at"]
        read_only_fields = ["synced_at", "created_at", "updated_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The transport's own rules, on the fields as they will be saved."""
        merged = {
            field: attrs.get(field, getattr(self.instance, field, ""))
            for field in ("transport", "url", "command", "user_identity")
        }
        merged["transport"] = merged["transport"] or "http"
        merged["user_identity"] = merged["user_identity"] or "server"
        try:
            server_validate(**merged)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs


class McpToolSerializer(serializers.ModelSerializer):
    """One snapshot tool: what agents are offered, and whether they may use it now."""

    key = serializers.CharField(read_only=True)
    needs_approval = serializers.BooleanField(read_only=True)

    class Meta:
        model = McpTool
        fields = [
            "key",
            "name",
            "function_name",
            "title",
            "description",
            "input_schema",
            "annotations",
            "definition_hash",
            "status",
            "approval",
            "needs_approval",
            "updated_at",
        ]
        read_only_fields = [f for f in fields if f != "approval"]


class McpSyncSerializer(serializers.ModelSerializer):
    """One read of a server's tools: what changed and whether it applied."""

    has_changes = serializers.BooleanField(read_only=True)

    class Meta:
        model = McpSync
        fields = ["id", "status", "has_changes", "changes", "created_at", "decided_at"]
        read_only_fields = fields


class McpConnectionSerializer(serializers.Serializer):
    """A per-user server as a user sees it: whether their own account is connected."""

    server = serializers.CharField(source="server.name", read_only=True)
    display_name = serializers.CharField(source="server.display_name", read_only=True)
    description = serializers.CharField(source="server.description", read_only=True)
    connected = serializers.BooleanField(read_only=True)


class McpTokenSerializer(serializers.Serializer):
    """The user's own token for a per-user server (write only: never shown again)."""

    token = StrictCharField(write_only=True, max_length=4096, trim_whitespace=True)
