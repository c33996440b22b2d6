"""The knowledge admin's tool pages: upload many files, test a search as a user, chunk pages."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.knowledge import batch
from agents.knowledge.admin_forms import DEFAULT_TOP_K, SearchAsForm, UploadManyForm
from agents.knowledge.models import Chunk, Document, KnowledgeBase
from agents.knowledge.search_as import passages_search_as
from agents.knowledge.selectors import HEAVY_FIELDS
from config.errors import AppError

CHUNKS_PER_PAGE = 20
RECENT_DOCUMENTS = 10


OUTCOME_LABELS = {
    batch.ADDED: gettext_lazy("Added"),
    batch.NEW_VERSION: gettext_lazy("New version"),
    batch.UNCHANGED: gettext_lazy("Unchanged"),
    batch.REFUSED: gettext_lazy("Refused"),
}


def _summary(outcomes: list[batch.FileOutcome]) -> list[tuple[tuple[str, Any], int]]:
    """How many files ended each way ((outcome, label), count), the ways none ended left out."""
    counts = {key: sum(o.outcome == key for o in outcomes) for key in OUTCOME_LABELS}
    return [((key, OUTCOME_LABELS[key]), n) for key, n in counts.items() if n]


def _page(model_admin: admin.ModelAdmin, request: HttpRequest, kb: KnowledgeBase, **extra: Any):
    """What every tool page's template needs: the admin frame, the knowledge base, its name."""
    return {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "kb": kb,
        "kb_name": kb.name_in(),
        **extra,
    }


def upload_view(model_admin: admin.ModelAdmin, request: HttpRequest, kb_id: int) -> HttpResponse:
    """Upload many files to a knowledge base; each file's outcome is listed (staff who may add
    documents)."""
    if not model_admin.admin_site.get_model_admin(Document).has_add_permission(request):
        raise PermissionDenied
    kb = get_object_or_404(KnowledgeBase, pk=kb_id)
    outcomes = None
    form = UploadManyForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        outcomes = batch.documents_upload_many(
            kb=kb,
            files=form.cleaned_data["uploads"],
            user=request.user,
            effective_date=form.cleaned_data.get("effective_date"),
        )
        form = UploadManyForm()
    recent = Document.objects.filter(kb=kb).defer(*HEAVY_FIELDS).select_related("superseded_by")
    context = _page(
        model_admin,
        request,
        kb,
        title=_("Upload documents to %(kb)s") % {"kb": kb.name_in()},
        form=form,
        outcomes=outcomes,
        summary=_summary(outcomes or []),
        max_files=settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        recent=recent.order_by("-created_at", "-pk")[:RECENT_DOCUMENTS],
        media=model_admin.media + form.media,
    )
    return TemplateResponse(request, "admin/knowledge/upload.html", context)


def search_view(model_admin: admin.ModelAdmin, request: HttpRequest, kb_id: int) -> HttpResponse:
    """Search a knowledge base as a chosen user would through kb_search (staff who may view it)."""
    kb = get_object_or_404(KnowledgeBase.objects.select_related("access_group"), pk=kb_id)
    if not model_admin.has_view_permission(request, kb):
        raise PermissionDenied
    form = SearchAsForm(_search_data(request), viewer=request.user)
    result = None
    if form.is_valid():
        try:
            result = passages_search_as(
                kb=kb,
                user=form.cleaned_data["username"],
                query=form.cleaned_data["query"],
                top_k=form.cleaned_data["top_k"] or DEFAULT_TOP_K,
            )
        except AppError as exc:
            form.add_error("query", exc.message)
    context = _page(
        model_admin,
        request,
        kb,
        title=_("Test retrieval in %(kb)s") % {"kb": kb.name_in()},
        form=form,
        result=result,
        searched_as=form.cleaned_data.get("username") if result else None,
        may_pick_users=request.user.has_perm("auth.view_user"),
    )
    return TemplateResponse(request, "admin/knowledge/search.html", context)


def _search_data(request: HttpRequest) -> Any:
    """The query string as the form's data (None before a search), the staff member and the
    default number of passages filled in where left out."""
    if not request.GET:
        return None
    data = request.GET.copy()
    if not data.get("username", "").strip():
        data["username"] = request.user.get_username()
    if not data.get("top_k", "").strip():
        data["top_k"] = str(DEFAULT_TOP_K)
    return data


def chunk_page(request: HttpRequest, document: Document) -> Page:
    """One page of a document's chunks, as retrieval stores them (`?chunks=N`)."""
    chunks = Chunk.objects.filter(document=document).only(
        "id", "position", "heading_path", "text", "char_count", "document_id"
    )
    return Paginator(chunks.order_by("position"), CHUNKS_PER_PAGE).get_page(
        request.GET.get("chunks")
    )
