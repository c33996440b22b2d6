"""REST endpoints of the activity log (list and CSV export, scoped to the reader) and agent
states; each asks the model permission the admin asks."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import Agent
from config.api_errors import ERRORS
from config.permissions import ModelPermissions
from delegation.humans.api.paging import page
from delegation.humans.models import Activity, ActivityKind
from delegation.humans.selectors import activity_for
from delegation.humans.serializers import (
    ActivityPageSerializer,
    ActivityQuerySerializer,
    ActivitySerializer,
    AgentStateSerializer,
)
from delegation.humans.states import agent_quality, agent_states, idle_state, state_text


def _activity(request: Request) -> QuerySet[Activity]:
    query = ActivityQuerySerializer(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    filters = query.validated_data
    rows = activity_for(user=request.user)
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
    """The activity log (humans.view_activity), the rows the reader may see."""

    permission_classes = [ModelPermissions]
    permission_model = Activity

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
        return page(request, self, _activity(request), ActivitySerializer)


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
    """The activity log as CSV (humans.view_activity), with the list's filters and scope."""

    permission_classes = [ModelPermissions]
    permission_model = Activity
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
    """Every agent's live state and quality counts (agents.view_agent, as the agents list of
    the admin shows them)."""

    permission_classes = [ModelPermissions]
    permission_model = Agent

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
