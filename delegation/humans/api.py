"""REST endpoints of humans in the loop: the inbox and its decisions, the review queue, the
activity log (and its CSV export), agent states."""

from __future__ import annotations

import csv
import io
import json
import uuid
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAdminUser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import Agent
from chat.api import TimestampCursor
from config.api_errors import ERRORS, ErrorSerializer
from delegation.humans.decisions import item_cancel, item_decide
from delegation.humans.models import Activity, ActivityKind, ItemKind, ItemStatus
from delegation.humans.reviews import review_decide
from delegation.humans.selectors import (
    access_inbox_item,
    access_review,
    inbox_items_for,
    reviews_for,
)
from delegation.humans.serializers import (
    ActivityPageSerializer,
    ActivityQuerySerializer,
    ActivitySerializer,
    AgentStateSerializer,
    DecisionSerializer,
    InboxItemSerializer,
    InboxPageSerializer,
    ReviewDecisionSerializer,
    ReviewPageSerializer,
    ReviewSerializer,
)
from delegation.humans.states import agent_quality, agent_states, idle_state, state_text
from delegation.models import Run
from delegation.selectors import run_tree

DECIDE_ERRORS = {**ERRORS, 409: ErrorSerializer}


class NewestFirst(TimestampCursor):
    """Cursor pages, newest first."""

    ordering = ("-created_at", "-id")

    def get_page_size(self, request: Request) -> int:
        """The API's page size (read per request)."""
        return settings.API_PAGE_SIZE


def _page(
    request: Request, view: APIView, rows: QuerySet, serializer: Any, **context: Any
) -> Response:
    paginator = NewestFirst()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer(page, many=True, context=context).data)


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
            raise _bad("status", "One of pending, decided, all.")
        kind = request.query_params.get("kind")
        if kind is not None:
            if kind not in ItemKind.values:
                raise _bad("kind", "One of question, tool_approval.")
            items = items.filter(kind=kind)
        return _page(request, self, items, InboxItemSerializer)


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


def _trees(reviews: list[Any]) -> dict[Any, list[Run]]:
    return {review.run_id: run_tree(run=review.run) for review in reviews}


class ReviewListView(APIView):
    """The review queue (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="reviews_list",
        parameters=[
            OpenApiParameter(
                "status", str, enum=["pending", "done", "all"], description="pending (default)."
            ),
            OpenApiParameter("agent", str, description="The flagged agent's name."),
            OpenApiParameter("cursor", str, description="From a page's next/previous link."),
        ],
        responses={200: ReviewPageSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Answers flagged `needs_review`, with question, tree, issue and citations."""
        reviews = reviews_for(user=request.user)
        wanted = request.query_params.get("status", "pending")
        if wanted == "pending":
            reviews = reviews.filter(status="pending")
        elif wanted == "done":
            reviews = reviews.exclude(status="pending")
        elif wanted != "all":
            raise _bad("status", "One of pending, done, all.")
        if request.query_params.get("agent"):
            reviews = reviews.filter(agent_name=request.query_params["agent"])
        paginator = NewestFirst()
        page = paginator.paginate_queryset(reviews, request, view=self)
        data = ReviewSerializer(page, many=True, context={"trees": _trees(page)}).data
        return paginator.get_paginated_response(data)


class ReviewDetailView(APIView):
    """One review (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(operation_id="reviews_retrieve", responses={200: ReviewSerializer, **ERRORS})
    def get(self, request: Request, review_id: uuid.UUID) -> Response:
        """The review with the turn's tree."""
        review = access_review(request.user, review_id)
        return Response(ReviewSerializer(review, context={"trees": _trees([review])}).data)


class ReviewDecisionView(APIView):
    """Mark a flagged answer (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="reviews_decide",
        request=ReviewDecisionSerializer,
        responses={200: ReviewSerializer, **DECIDE_ERRORS},
    )
    def post(self, request: Request, review_id: uuid.UUID) -> Response:
        """correct; wrong (with `note`); fixed (with `corrected_answer`, sent to the user's
        chat as a follow-up from "Reviewer"). 409 `already_decided` when reviewed already."""
        review = access_review(request.user, review_id)
        body = ReviewDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        review = review_decide(review=review, user=request.user, **body.validated_data)
        return Response(ReviewSerializer(review, context={"trees": _trees([review])}).data)


def _activity(request: Request) -> QuerySet[Activity]:
    query = ActivityQuerySerializer(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    filters = query.validated_data
    rows = Activity.objects.select_related("user", "actor")
    if "kind" in filters:
        rows = rows.filter(kind=filters["kind"])
    if filters.get("agent"):
        rows = rows.filter(agent_name=filters["agent"])
    if "run" in filters:
        rows = rows.filter(Q(root_id=filters["run"]) | Q(run_id=filters["run"]))
    if "since" in filters:
        rows = rows.filter(created_at__gte=filters["since"])
    if "until" in filters:
        rows = rows.filter(created_at__lt=filters["until"])
    return rows


ACTIVITY_FILTERS = [
    OpenApiParameter("kind", str, enum=ActivityKind.values, description="One activity kind."),
    OpenApiParameter("agent", str, description="An agent's name (empty: every agent)."),
    OpenApiParameter(
        "run", OpenApiTypes.UUID, description="A turn's root run id (or any run's id)."
    ),
    OpenApiParameter("since", OpenApiTypes.DATETIME),
    OpenApiParameter("until", OpenApiTypes.DATETIME),
]


class ActivityListView(APIView):
    """The activity log (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="activity_list",
        parameters=[
            *ACTIVITY_FILTERS,
            OpenApiParameter("cursor", str, description="From a page's next/previous link."),
        ],
        responses={200: ActivityPageSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """One row per notable event, newest first, filtered."""
        return _page(request, self, _activity(request), ActivitySerializer)


class CsvRenderer(BaseRenderer):
    """text/csv for the export (its errors are JSON text in the API's error shape)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None
    ) -> bytes:
        """Errors only: the export itself is written by the view."""
        return json.dumps(data, ensure_ascii=False).encode()


EXPORT_COLUMNS = [
    "created_at",
    "kind",
    "agent_name",
    "run_id",
    "root_id",
    "user",
    "actor",
    "summary",
    "data",
]


class ActivityExportView(APIView):
    """The activity log as CSV (staff), with the list's filters."""

    permission_classes = [IsAdminUser]
    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(
        operation_id="activity_export",
        parameters=ACTIVITY_FILTERS,
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="One row per event."),
            **ERRORS,
        },
    )
    def get(self, request: Request) -> HttpResponse:
        """CSV with a header row, oldest first: created_at, kind, agent_name, run_id, root_id,
        user, actor, summary, data (JSON)."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(EXPORT_COLUMNS)
        for row in _activity(request).order_by("created_at", "id").iterator():
            writer.writerow(
                [
                    row.created_at.isoformat(),
                    row.kind,
                    row.agent_name,
                    row.run_id or "",
                    row.root_id or "",
                    row.user.username if row.user_id else "",
                    row.actor.username if row.actor_id else "",
                    _cell(row.summary),
                    _cell(json.dumps(row.data, ensure_ascii=False)),
                ]
            )
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="activity.csv"'
        return response


def _cell(text: str) -> str:
    """A cell a spreadsheet will not run as a formula (CSV injection)."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class AgentStateListView(APIView):
    """Every agent's live state and quality counts (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        operation_id="agent_states_list", responses={200: AgentStateSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        """idle / working / blocked_internal (waiting for experts) / blocked_user (waiting for
        a human), with counts and the oldest wait."""
        states, quality = agent_states(), agent_quality()
        rows = []
        for agent in Agent.objects.order_by("name"):
            state = states.get(agent.pk) or idle_state()
            rows.append(
                {
                    "name": agent.name,
                    "display_name": agent.display_name,
                    **{
                        k: state[k]
                        for k in ("state", "working", "blocked_internal", "blocked_user")
                    },
                    "oldest_wait": state["oldest_wait"],
                    "text": state_text(state),
                    "quality": quality.get(agent.name, {}),
                }
            )
        return Response(AgentStateSerializer(rows, many=True).data)


def _bad(field: str, message: str) -> Exception:
    return ValidationError({field: [message]})
