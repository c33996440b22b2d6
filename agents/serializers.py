"""API shapes of agents and tools."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import AGENT_EDITABLE_FIELDS, ENV_NAME, Agent, Provider
from agents.names import (
    DESCRIPTION_MAX_CHARS,
    LANGUAGES,
    NAME_MAX_CHARS,
    validate_descriptions,
    validate_display_names,
)
from agents.validation import stale_tool_keys
from config.api_fields import StrictCharField, StrictModelSerializer, StrictSlugRelatedField


def _per_language_schema(max_chars: int) -> dict[str, Any]:
    """An object with an optional text per language, and no other key."""
    text = {"type": "string", "maxLength": max_chars}
    return {
        "type": "object",
        "properties": {language: text for language in LANGUAGES},
        "additionalProperties": False,
    }


@extend_schema_field(_per_language_schema(NAME_MAX_CHARS))
class NamesField(serializers.DictField):
    """{"en": …, "zh-hant": …, "zh-hans": …}: a name per language (any may be left out)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(
            child=StrictCharField(
                max_length=NAME_MAX_CHARS, allow_blank=True, trim_whitespace=False
            ),
            validators=[validate_display_names],
            **kwargs,
        )


@extend_schema_field(_per_language_schema(DESCRIPTION_MAX_CHARS))
class DescriptionsField(serializers.DictField):
    """{"en": …, "zh-hant": …, "zh-hans": …}: a description per language."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(
            child=StrictCharField(
                max_length=DESCRIPTION_MAX_CHARS, allow_blank=True, trim_whitespace=False
            ),
            validators=[validate_descriptions],
            **kwargs,
        )


class AgentSummarySerializer(serializers.ModelSerializer):
    """What a user (or a router) needs to know about an agent."""

    display_names = NamesField(read_only=True)
    descriptions = DescriptionsField(read_only=True)

    class Meta:
        model = Agent
        fields = [
            "name",
            "display_name",
            "display_names",
            "description",
            "descriptions",
            "tags",
            "is_entry",
            "delegatable",
            "enabled",
            "version",
        ]
        read_only_fields = fields


class AgentSummarySchema(OpenApiSerializerExtension):
    """The summary schema names every field it has and no other, so a client (and a schema
    check) can tell it from the full definition: agent detail is one of the two by role."""

    target_class = AgentSummarySerializer

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        """The generated schema, closed to other properties."""
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}


class AgentSerializer(StrictModelSerializer):
    """The full definition, as staff edit it. This checks shapes only: the rules (the admin
    form's) run in agents.services.agent_save, which the API view calls."""

    display_names = NamesField()
    descriptions = DescriptionsField()
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
    call_timeout_seconds = serializers.IntegerField(
        min_value=1,
        max_value=int(settings.MODEL_CALL_WORST_SECONDS),
        allow_null=True,
        required=False,
        help_text="Seconds one model call (a remote agent's whole answer) may take; null uses "
        "OPENAI_TIMEOUT (A2A_TIMEOUT_SECONDS). At most what the workers' time limits allow.",
    )
    secret_headers = serializers.DictField(
        child=StrictCharField(max_length=100, validators=[ENV_NAME]),
        required=False,
        help_text="Extra headers sent to the model server or remote agent: each header name "
        "mapped to the environment variable holding its value (at most 10).",
    )
    knowledge_bases = serializers.SlugRelatedField(
        slug_field="name",
        many=True,
        read_only=True,
        help_text="Knowledge bases linked to the agent (linked from the knowledge base's side); "
        "they give it the kb_search and kb_documents tools.",
    )
    stale_tool_keys = serializers.SerializerMethodField(
        help_text="Tool keys in `tool_keys` that the code no longer registers: skipped at run "
        "time, kept until removed. Adding a new unknown key is refused."
    )

    class Meta:
        model = Agent
        fields = [
            *AGENT_EDITABLE_FIELDS,
            "knowledge_bases",
            "stale_tool_keys",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["version", "created_at", "updated_at"]
        # Not the one-entry-agent constraint's validator: saving an entry agent moves the flag.
        extra_kwargs = {"is_entry": {"validators": []}}

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_stale_tool_keys(self, agent: Agent) -> list[str]:
        """Listed tool keys the code no longer registers (skipped at run time)."""
        return stale_tool_keys(agent.tool_keys)


class ToolSerializer(serializers.Serializer):
    """A registered tool: what it does and its argument schema."""

    key = serializers.CharField()
    description = serializers.CharField()
    parameters = serializers.JSONField()
    permission = serializers.CharField(allow_null=True)
    side_effect = serializers.BooleanField()
