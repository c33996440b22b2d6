"""REST endpoints of the inbox: list, detail, decide, cancel."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import ERRORS
from delegation.humans.api.paging import DECIDE_ERRORS, bad_filter, page
from delegation.humans.decisions import item_cancel, item_decide
from delegation.humans.models import ItemKind, ItemStatus
from delegation.humans.selectors import access_inbox_item, inbox_items_for
from delegation.humans.serializers import (
    DecisionSerializer,
    InboxItemSerializer,
    InboxPageSerializer,
)


class InboxListView(APIView):
    """Questions and tool approvals waiting for a person."""

    @extend_schema(
        operation_id="inbox_list",
        parameters=[
            OpenApiParameter(
                "status",
                str,
                enum=["pending", "decided", "all"],
                description="pending (default), decided (every other status), or all.",
            ),
            OpenApiParameter("kind", str, enum=ItemKind.values),
            OpenApiParameter("cursor", str, description="From a page's next/previous link."),
        ],
        responses={200: InboxPageSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Staff: the items of their groups (every item for superusers); everyone: the
        questions their own agents asked them and their requests awaiting approval."""
        items = inbox_items_for(user=request.user)
        wanted = request.query_params.get("status", "pending")
        if wanted == "pending":
            items = items.filter(status=ItemStatus.PENDING)
        elif wanted == "decided":
            items = items.exclude(status=ItemStatus.PENDING)
        elif wanted != "all":
            raise bad_filter("status", "One of pending, decided, all.")
        kind = request.query_params.get("kind")
        if kind is not None:
            if kind not in ItemKind.values:
                raise bad_filter("kind", "One of question, tool_approval.")
            items = items.filter(kind=kind)
        return page(request, self, items, InboxItemSerializer)


class InboxDetailView(APIView):
    """One inbox item."""

    @extend_schema(operation_id="inbox_retrieve", responses={200: InboxItemSerializer, **ERRORS})
    def get(self, request: Request, item_id: uuid.UUID) -> Response:
        """The item, if the user may see it (else 404, as for a missing one)."""
        return Response(InboxItemSerializer(access_inbox_item(request.user, item_id)).data)


class InboxDecisionView(APIView):
    """Decide an item: the first decision wins and resumes only the run that asked."""

    @extend_schema(
        operation_id="inbox_decide",
        request=DecisionSerializer,
        responses={200: InboxItemSerializer, **DECIDE_ERRORS},
    )
    def post(self, request: Request, item_id: uuid.UUID) -> Response:
        """approve (a question needs `answer`), modify (`arguments`, checked against the
        tool's schema) or reject (`note` optional). 409 `already_decided` if someone decided
        first or the wait ended."""
        item = access_inbox_item(request.user, item_id)
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        item = item_decide(item=item, user=request.user, **body.validated_data)
        return Response(InboxItemSerializer(item).data)


class InboxCancelView(APIView):
    """The end user stops waiting."""

    @extend_schema(
        operation_id="inbox_cancel",
        request=None,
        responses={200: InboxItemSerializer, **DECIDE_ERRORS},
    )
    def post(self, request: Request, item_id: uuid.UUID) -> Response:
        """Cancel the wait of one's own run: it goes on without the answer (a gated tool does
        not run). 409 `already_decided` if a decision came first."""
        item = item_cancel(item=access_inbox_item(request.user, item_id), user=request.user)
        return Response(InboxItemSerializer(item).data)
