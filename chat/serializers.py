"""API shapes of chat sessions, messages and tokens."""

from __future__ import annotations

from zoneinfo import available_timezones

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chat.models import ApiToken, ChatMessage, ChatSession
from config.api_fields import (
    StrictBooleanField,
    StrictCharField,
    StrictModelSerializer,
    StrictUUIDField,
)


class SessionSerializer(StrictModelSerializer):
    """A chat session; `id` may be chosen by the client when creating."""

    id = StrictUUIDField(required=False)
    title = StrictCharField(max_length=200, required=False, allow_blank=True)
    agent = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ChatSession
        fields = ["id", "title", "agent", "created_at", "updated_at"]
        read_only_fields = ["agent", "created_at", "updated_at"]


class SessionSearchSerializer(serializers.Serializer):
    """The query of the session list (a string, never a NUL, which Postgres cannot compare)."""

    search = StrictCharField(required=False, allow_blank=True)


class SessionRenameSerializer(serializers.Serializer):
    """The one editable field of a session; PATCH is partial, so `{}` changes nothing."""

    title = StrictCharField(max_length=200, allow_blank=False, required=False)


class AgentTagSerializer(serializers.Serializer):
    """Who produced a message: `{kind, name, display_name, depth, path}`."""

    kind = serializers.ChoiceField(choices=["entry", "sub"])
    name = serializers.CharField()
    display_name = serializers.CharField()
    depth = serializers.IntegerField()
    path = serializers.ListField(child=serializers.CharField())


class MessageSerializer(serializers.ModelSerializer):
    """A message as the snapshot and the stream show it."""

    run_id = serializers.UUIDField(allow_null=True, read_only=True)
    agent = AgentTagSerializer(allow_null=True, read_only=True)
    tool = serializers.JSONField(allow_null=True, read_only=True)
    citations = serializers.JSONField(read_only=True)
    usage = serializers.JSONField(allow_null=True, read_only=True)
    edited_from = serializers.UUIDField(source="edited_from_id", allow_null=True, read_only=True)
    superseded_by = serializers.UUIDField(allow_null=True, read_only=True)

    class Meta:
        model = ChatMessage
        # Every field docs/protocol.md lists for a message, as the snapshot carries them.
        fields = [
            "id",
            "role",
            "run_id",
            "agent",
            "content",
            "model",
            "tool",
            "status",
            "citations",
            "usage",
            "origin",
            "edited_from",
            "superseded_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


TIMEZONES = sorted(available_timezones())


@extend_schema_field({"type": "string", "enum": TIMEZONES, "example": "Asia/Taipei"})
class TimezoneField(serializers.ChoiceField):
    """An IANA timezone name (the schema lists them, without a line per name in prose)."""


class MessageSendSerializer(serializers.Serializer):
    """A user message; `id` makes retries idempotent."""

    id = StrictUUIDField(required=False, help_text="Client-chosen message id (idempotency).")
    text = StrictCharField(max_length=settings.CHAT_MAX_MESSAGE_CHARS, trim_whitespace=True)
    timezone = TimezoneField(
        choices=TIMEZONES,
        required=False,
        help_text="The user's IANA timezone, e.g. Asia/Taipei.",
        error_messages={"invalid_choice": "Not an IANA timezone name (e.g. Asia/Taipei)."},
    )
    force_strict = StrictBooleanField(
        required=False, default=False, help_text="Answer STRICT: only from knowledge, cited."
    )
    force_guide = StrictBooleanField(
        required=False, default=False, help_text="Answer in GUIDE mode: orient and suggest."
    )


class MessageAcceptedSerializer(serializers.Serializer):
    """The answer to a send: the stored message and the run answering it."""

    message = MessageSerializer()
    run_id = serializers.UUIDField(allow_null=True)
    duplicate = serializers.BooleanField()


class TokenSerializer(serializers.ModelSerializer):
    """A token as listed: never its secret."""

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
        read_only_fields = fields


class TokenCreateSerializer(serializers.Serializer):
    """What a new token is called."""

    name = StrictCharField(max_length=100)


class TokenCreatedSerializer(TokenSerializer):
    """A new token with its secret, shown this once."""

    token = serializers.CharField(read_only=True)

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class SessionPageSerializer(serializers.Serializer):
    """A cursor page of sessions."""

    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = SessionSerializer(many=True)


class MessagePageSerializer(serializers.Serializer):
    """A cursor page of messages."""

    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = MessageSerializer(many=True)
