"""Admin for knowledge: bases with their agents and documents, uploads with status, chunks, and
the tool pages (many files at once, a test search as a user: admin_tools.py)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from agents.forms_languages import LanguageTextsField
from agents.knowledge import admin_tools
from agents.knowledge.models import Chunk, Document, KnowledgeBase
from agents.knowledge.selectors import HEAVY_FIELDS, document_with_hash
from agents.knowledge.services import (
    content_hash_of,
    document_reindex,
    document_upload,
    knowledge_links_changed,
    upload_check,
)
from config.errors import AppError
from config.text import joined


class DocumentInline(admin.TabularInline):
    """The documents of a knowledge base, read-only, with their status."""

    model = Document
    fields = ["title", "version", "effective_date", "status_text", "superseded"]
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Upload on the document page, which indexes."""
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        """Without the stored bytes."""
        return super().get_queryset(request).defer(*HEAVY_FIELDS)


class KnowledgeBaseForm(forms.ModelForm):
    """A knowledge base, with its name and description in each language as plain text."""

    display_names = LanguageTextsField(label=_("Names per language"))
    descriptions = LanguageTextsField(multiline=True, label=_("Descriptions per language"))

    class Meta:
        model = KnowledgeBase
        fields = [
            "name",
            "display_name",
            "description",
            "display_names",
            "descriptions",
            "access_group",
            "access_permission",
            "agents",
        ]


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(admin.ModelAdmin):
    """Name (in each language), who may read it, which agents may search it."""

    form = KnowledgeBaseForm
    list_display = ["name", "name_shown", "access_group", "access_permission", "agent_names"]
    search_fields = ["name", "display_name", "description"]
    filter_horizontal = ["agents"]
    inlines = [DocumentInline]
    fieldsets = [
        (None, {"fields": ["name", "display_name", "description"]}),
        (
            _("In each language"),
            {
                "fields": ["display_names", "descriptions"],
                "description": _(
                    "What people read in their language. Left blank: the other Chinese script's "
                    "text converted (繁 ↔ 简), else the display name and description above."
                ),
            },
        ),
        (_("Access"), {"fields": ["access_group", "access_permission", "agents"]}),
    ]

    @admin.display(description=_("name people read"), ordering="display_name")
    def name_shown(self, kb: KnowledgeBase) -> str:
        """Its name in the admin's language."""
        return kb.name_in()

    @admin.display(description=_("agents"))
    def agent_names(self, kb: KnowledgeBase) -> str:
        """The linked agents, by the names people read."""
        return joined([agent.name_in() for agent in kb.agents.all()])

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeBase]:
        """With agents and groups in few queries."""
        return (
            super().get_queryset(request).prefetch_related("agents").select_related("access_group")
        )

    def get_urls(self) -> list[Any]:
        """Its pages, plus the upload of many files and the test search of one base."""
        view = self.admin_site.admin_view
        return [
            path(
                "<int:kb_id>/upload/",
                view(self.upload_view),
                name="knowledge_knowledgebase_upload",
            ),
            path(
                "<int:kb_id>/search/",
                view(self.search_view),
                name="knowledge_knowledgebase_search",
            ),
            *super().get_urls(),
        ]

    def upload_view(self, request: HttpRequest, kb_id: int) -> HttpResponse:
        """Upload many files at once (admin_tools.upload_view)."""
        return admin_tools.upload_view(self, request, kb_id)

    def search_view(self, request: HttpRequest, kb_id: int) -> HttpResponse:
        """Test retrieval as a chosen user (admin_tools.search_view)."""
        return admin_tools.search_view(self, request, kb_id)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Saved with its agents; those linked or unlinked count as changed."""
        before = set(form.instance.agents.values_list("pk", flat=True)) if change else set()
        super().save_related(request, form, formsets, change)
        after = set(form.instance.agents.values_list("pk", flat=True))
        knowledge_links_changed(agent_ids=before ^ after)

    def delete_model(self, request: HttpRequest, obj: KnowledgeBase) -> None:
        """Deleted; its agents lose it, so they count as changed."""
        linked = list(obj.agents.values_list("pk", flat=True))
        super().delete_model(request, obj)
        knowledge_links_changed(agent_ids=linked)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        """Deleted in bulk; their agents count as changed."""
        linked = list(queryset.values_list("agents", flat=True))
        super().delete_queryset(request, queryset)
        knowledge_links_changed(agent_ids=[pk for pk in linked if pk is not None])


class DocumentUploadForm(forms.ModelForm):
    """Adding a document is an upload; the file is checked before anything is stored."""

    upload = forms.FileField(
        label=_("File"), help_text=_(".md, .txt, .html, .pdf (with text) or .docx")
    )

    class Meta:
        model = Document
        fields = ["kb", "title", "source", "effective_date"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["title"].required = False
        self.fields["title"].help_text = _(
            "Blank: the file name. The same title (or source) as an existing document makes a "
            "new version of it."
        )

    def clean_upload(self) -> Any:
        """Refuse unsupported, empty and oversized files with the service's message."""
        upload = self.cleaned_data["upload"]
        try:
            upload_check(filename=upload.name, size=upload.size)
        except AppError as exc:
            raise forms.ValidationError(exc.message) from exc
        return upload

    def clean(self) -> dict[str, Any]:
        """A file already in the knowledge base makes no new version."""
        cleaned = super().clean()
        upload, kb = cleaned.get("upload"), cleaned.get("kb")
        if upload is not None and kb is not None:
            twin = document_with_hash(kb=kb, content_hash=content_hash_of(upload.read()))
            if twin is not None:
                words = _(
                    "This file is already in %(knowledge_base)s as “%(title)s” version "
                    "%(version)s; no new version was made."
                )
                values = {"knowledge_base": kb.name, "title": twin.title, "version": twin.version}
                self.add_error("upload", words % values)
        return cleaned


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    """Upload documents, watch their status, re-index them."""

    list_display = ["title", "kb", "version", "effective_date", "status_column", "created_at"]
    list_filter = ["kb", "status", "superseded"]
    search_fields = ["title", "source", "filename"]
    actions = ["reindex"]
    readonly_fields = [
        "kb",
        "title",
        "source",
        "version",
        "filename",
        "file_type",
        "content_hash",
        "status_column",
        "superseded_by",
        "uploaded_by",
        "indexed_at",
        "created_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        """Without the stored bytes and text."""
        return super().get_queryset(request).defer(*HEAVY_FIELDS).select_related("kb")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        """The upload form to add; the plain form (effective date only) to change."""
        if obj is None:
            kwargs["form"] = DocumentUploadForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """Upload fields when adding; metadata and status when changing."""
        if obj is None:
            return ["kb", "upload", "title", "source", "effective_date"]
        return [*self.readonly_fields[:3], "effective_date", *self.readonly_fields[3:]]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """Nothing is read-only on the upload form."""
        return [] if obj is None else self.readonly_fields

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The document's page, with a page of its chunks below (`?chunks=N`)."""
        document = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if document is not None:
            page = admin_tools.chunk_page(request, document)
            extra["chunk_page"] = page
            extra["chunk_page_range"] = list(page.paginator.get_elided_page_range(page.number))
        return super().change_view(request, object_id, form_url, extra_context=extra)

    @admin.display(description=_("status"))
    def status_column(self, document: Document) -> str:
        """queued, indexed with N chunks, failed: reason, or superseded."""
        return document.status_text

    def save_model(self, request: HttpRequest, obj: Document, form: Any, change: bool) -> None:
        """A new document goes through the upload service (versions, duplicates, indexing)."""
        if change:
            super().save_model(request, obj, form, change)
            return
        upload = form.cleaned_data["upload"]
        upload.seek(0)
        created = document_upload(
            kb=form.cleaned_data["kb"],
            filename=upload.name,
            data=upload.read(),
            title=form.cleaned_data.get("title") or "",
            source=form.cleaned_data.get("source") or "",
            effective_date=form.cleaned_data.get("effective_date"),
            user=request.user,
        )
        obj.pk = created.pk
        obj.version = created.version

    @admin.action(description=_("Re-index the selected documents"))
    def reindex(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        """Queue each selected document for indexing again."""
        for document in queryset:
            document_reindex(document=document)
        count = queryset.count()
        words = ngettext(
            "%(count)s document queued for indexing.",
            "%(count)s documents queued for indexing.",
            count,
        )
        self.message_user(request, words % {"count": count})


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    """Chunks as retrieval sees them; read-only."""

    list_display = ["document", "position", "heading_path", "char_count", "kb"]
    list_filter = ["kb"]
    search_fields = ["text"]
    fields = ["document", "kb", "position", "heading_path", "char_count", "text", "vector_model"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Chunks come from indexing."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Read-only."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Deleting a document deletes its chunks."""
        return False
