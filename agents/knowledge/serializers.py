"""API shapes of knowledge bases and documents."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission
from rest_framework import serializers

from agents.knowledge.models import Document, KnowledgeBase
from agents.models import Agent
from agents.serializers import DescriptionsField, NamesField
from config.api_fields import StrictCharField, StrictModelSerializer, StrictSlugRelatedField


class KnowledgeBaseSerializer(StrictModelSerializer):
    """A knowledge base as staff edit it: access rule and linked agents by name."""

    agents = StrictSlugRelatedField(
        slug_field="name", many=True, required=False, queryset=Agent.objects.all()
    )
    access_group = StrictSlugRelatedField(
        slug_field="name", required=False, allow_null=True, queryset=Group.objects.all()
    )
    display_names = NamesField()
    descriptions = DescriptionsField()
    document_count = serializers.SerializerMethodField()

    class Meta:
        model = KnowledgeBase
        fields = [
            "id",
            "name",
            "display_name",
            "display_names",
            "description",
            "descriptions",
            "access_group",
            "access_permission",
            "agents",
            "document_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "document_count", "created_at", "updated_at"]
        extra_kwargs = {"display_name": {"required": False}}

    def get_document_count(self, kb: KnowledgeBase) -> int:
        """Current (not superseded) documents."""
        return kb.documents.filter(superseded=False).count()

    def validate_access_permission(self, value: str) -> str:
        """An existing permission written app_label.codename, or blank."""
        if not value:
            return value
        app_label, _, codename = value.partition(".")
        if not Permission.objects.filter(
            content_type__app_label=app_label, codename=codename
        ).exists():
            raise serializers.ValidationError(f"No permission {value!r} (app_label.codename).")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A display name defaults to the name."""
        if not attrs.get("display_name") and "name" in attrs:
            attrs["display_name"] = attrs["name"].replace("-", " ").title()
        return attrs


class DocumentSerializer(serializers.ModelSerializer):
    """One version of a document, with its indexing status."""

    kb = serializers.SlugRelatedField(slug_field="name", read_only=True)
    status_text = serializers.CharField(read_only=True)

    class Meta:
        model = Document
        fields = [
            "id",
            "kb",
            "title",
            "source",
            "effective_date",
            "version",
            "filename",
            "file_type",
            "content_hash",
            "status",
            "status_detail",
            "status_text",
            "chunk_count",
            "superseded",
            "superseded_by",
            "indexed_at",
            "created_at",
        ]
        read_only_fields = fields


class DocumentUploadSerializer(serializers.Serializer):
    """A multipart upload: the file and optional title, source and effective date."""

    file = serializers.FileField(allow_empty_file=True)
    title = StrictCharField(max_length=300, required=False, allow_blank=True)
    source = StrictCharField(max_length=1000, required=False, allow_blank=True)
    effective_date = serializers.DateField(required=False)


class DocumentPageSerializer(serializers.Serializer):
    """A cursor page of documents."""

    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = DocumentSerializer(many=True)
