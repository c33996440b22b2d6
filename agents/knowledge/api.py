"""REST endpoints of knowledge bases and their documents (staff only)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.pagination import CursorPagination
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.knowledge.models import Document, KnowledgeBase
from agents.knowledge.selectors import access_document, access_knowledge_base, documents_of
from agents.knowledge.serializers import (
    DocumentPageSerializer,
    DocumentSerializer,
    DocumentUploadSerializer,
    KnowledgeBaseSerializer,
)
from agents.knowledge.services import (
    document_delete,
    document_upload,
    knowledge_base_create,
    upload_check,
)
from config.api_errors import ERRORS, ErrorSerializer
from config.permissions import ModelPermissions

UPLOAD_ERRORS = {**ERRORS, 409: ErrorSerializer, 413: ErrorSerializer, 415: ErrorSerializer}


class NewestFirst(CursorPagination):
    """Cursor pages of documents, newest upload first."""

    page_size = settings.API_PAGE_SIZE
    ordering = ("-created_at", "-id")


class KnowledgeBaseListView(APIView):
    """Knowledge bases: list and create (staff)."""

    permission_classes = [ModelPermissions]
    permission_model = KnowledgeBase

    @extend_schema(
        operation_id="knowledge_bases_list",
        responses={200: KnowledgeBaseSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Every knowledge base."""
        kbs = KnowledgeBase.objects.prefetch_related("agents").select_related("access_group")
        return Response(KnowledgeBaseSerializer(kbs, many=True).data)

    @extend_schema(
        operation_id="knowledge_bases_create",
        request=KnowledgeBaseSerializer,
        responses={201: KnowledgeBaseSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Create a knowledge base, optionally linked to agents by name."""
        serializer = KnowledgeBaseSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        kb = knowledge_base_create(**serializer.validated_data)  # (its agents count as changed)
        return Response(KnowledgeBaseSerializer(kb).data, status=status.HTTP_201_CREATED)


class KnowledgeBaseDetailView(APIView):
    """One knowledge base (staff)."""

    permission_classes = [ModelPermissions]
    permission_model = KnowledgeBase

    @extend_schema(
        operation_id="knowledge_bases_retrieve",
        responses={200: KnowledgeBaseSerializer, **ERRORS},
    )
    def get(self, request: Request, kb_id: int) -> Response:
        """The knowledge base with its access rule and agents."""
        return Response(KnowledgeBaseSerializer(access_knowledge_base(request.user, kb_id)).data)


class DocumentListView(APIView):
    """A knowledge base's documents: list every version, or upload one (multipart)."""

    permission_classes = [ModelPermissions]
    permission_model = Document
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="knowledge_documents_list",
        parameters=[OpenApiParameter("cursor", str, description="From a page's next link.")],
        responses={200: DocumentPageSerializer, **ERRORS},
    )
    def get(self, request: Request, kb_id: int) -> Response:
        """Every version, newest upload first, with status (queued, indexed, failed)."""
        kb = access_knowledge_base(request.user, kb_id)
        paginator = NewestFirst()
        page = paginator.paginate_queryset(documents_of(kb=kb), request, view=self)
        return paginator.get_paginated_response(DocumentSerializer(page, many=True).data)

    @extend_schema(
        operation_id="knowledge_documents_upload",
        request={"multipart/form-data": DocumentUploadSerializer},
        responses={202: DocumentSerializer, **UPLOAD_ERRORS},
    )
    def post(self, request: Request, kb_id: int) -> Response:
        """Upload a document (or a new version of one: same title or source); indexing runs in
        the background, so the answer is 202 with status "queued"."""
        kb = access_knowledge_base(request.user, kb_id)
        serializer = DocumentUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        upload_check(filename=upload.name or "", size=upload.size)  # before reading it
        document = document_upload(
            kb=kb,
            filename=upload.name or "",
            data=upload.read(),
            title=serializer.validated_data.get("title", ""),
            source=serializer.validated_data.get("source", ""),
            effective_date=serializer.validated_data.get("effective_date"),
            user=request.user,
        )
        return Response(DocumentSerializer(document).data, status=status.HTTP_202_ACCEPTED)


class DocumentDetailView(APIView):
    """One document version (staff): read or delete."""

    permission_classes = [ModelPermissions]
    permission_model = Document

    @extend_schema(
        operation_id="knowledge_documents_retrieve",
        responses={200: DocumentSerializer, **ERRORS},
    )
    def get(self, request: Request, kb_id: int, document_id: int) -> Response:
        """The document version and its status."""
        kb = access_knowledge_base(request.user, kb_id)
        return Response(DocumentSerializer(access_document(request.user, kb, document_id)).data)

    @extend_schema(operation_id="knowledge_documents_delete", responses={204: None, **ERRORS})
    def delete(self, request: Request, kb_id: int, document_id: int) -> Response:
        """Delete this version (if it was current, the previous version becomes current)."""
        kb = access_knowledge_base(request.user, kb_id)
        document_delete(document=access_document(request.user, kb, document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
