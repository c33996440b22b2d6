"""REST shapes of MCP servers, their snapshot tools and syncs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from agents.mcp.models import McpServer, McpSync, McpTool
from agents.mcp.validation import server_validate
from config.api_fields import StrictModelSerializer


class McpServerSerializer(StrictModelSerializer):
    """A server as staff define it (header values are environment variable names)."""

    class Meta:
        model = McpServer
        fields = [
            "name",
            "display_name",
            "display_names",
            "description",
            "transport",
            "url",
            "command",
            "headers",
            "connect_timeout",
            "call_timeout",
            "user_identity",
            "enabled",
            "synced_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["synced_at", "created_at", "updated_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The transport's own rules, on the fields as they will be saved."""
        merged = {
            field: attrs.get(field, getattr(self.instance, field, ""))
            for field in ("transport", "url", "command")
        }
        merged["transport"] = merged["transport"] or "http"
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
