"""What the humans API views share: newest-first cursor pages, the 409 error, bad filters."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.api import TimestampCursor
from config.api_errors import ERRORS, ErrorSerializer

DECIDE_ERRORS = {**ERRORS, 409: ErrorSerializer}


class NewestFirst(TimestampCursor):
    """Cursor pages, newest first."""

    ordering = ("-created_at", "-id")

    def get_page_size(self, request: Request) -> int:
        """The API's page size (read per request)."""
        return settings.API_PAGE_SIZE


def page(
    request: Request, view: APIView, rows: QuerySet, serializer: Any, **context: Any
) -> Response:
    paginator = NewestFirst()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True, context=context).data)


def bad_filter(field: str, message: str) -> Exception:
    return ValidationError({field: [message]})
