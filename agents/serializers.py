"""API shapes of agents and tools."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from agents.models import AGENT_EDITABLE_FIELDS, Agent, Provider
from agents.validation import agent_validate
from config.api_fields import StrictCharField, StrictModelSerializer, StrictSlugRelatedField


class AgentSummarySerializer(serializers.ModelSerializer):
    """What a user (or a router) needs to know about an agent."""

    class Meta:
        model = Agent
        fields = [
            "name",
            "display_name",
            "description",
            "tags",
            "is_entry",
            "delegatable",
            "enabled",
            "version",
        ]
        read_only_fields = fields


class AgentSerializer(StrictModelSerializer):
    """The full definition, as staff edit it; same rules as the admin form."""

    tags = serializers.ListField(
        child=StrictCharField(max_length=60), required=False, max_length=50
    )
    tool_keys = serializers.ListField(
        child=StrictCharField(max_length=100), required=False, max_length=100
    )
    allowed_subagents = StrictSlugRelatedField(
        slug_field="name", many=True, required=False, queryset=Agent.objects.all()
    )
    access_group = StrictSlugRelatedField(
        slug_field="name", required=False, allow_null=True, queryset=Group.objects.all()
    )
    provider = serializers.ChoiceField(choices=Provider.choices, required=False)

    class Meta:
        model = Agent
        fields = [*AGENT_EDITABLE_FIELDS, "version", "created_at", "updated_at"]
        read_only_fields = ["version", "created_at", "updated_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The cross-field rules of agents.validation."""

        def value(name: str, default: Any) -> Any:
            if name in attrs:
                return attrs[name]
            return getattr(self.instance, name, default) if self.instance else default

        subagents = attrs.get("allowed_subagents")
        if subagents is None and self.instance is not None:
            subagents = list(self.instance.allowed_subagents.all())
        try:
            agent_validate(
                agent_pk=self.instance.pk if self.instance else None,
                tool_keys=list(value("tool_keys", [])),
                allowed_subagent_pks=[a.pk for a in subagents or []],
                provider=value("provider", "default"),
                model=value("model", ""),
                access_permission=value("access_permission", ""),
                is_entry=bool(value("is_entry", False)),
                enabled=bool(value("enabled", True)),
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs


class ToolSerializer(serializers.Serializer):
    """A registered tool: what it does and its argument schema."""

    key = serializers.CharField()
    description = serializers.CharField()
    parameters = serializers.JSONField()
    permission = serializers.CharField(allow_null=True)
    side_effect = serializers.BooleanField()
