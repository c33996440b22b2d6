"""REST endpoints of usage: reports and the costliest turns (usage.view_usagerecord), a user's
own usage."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from config.api_errors import ERRORS
from config.permissions import ModelPermissions
from delegation.usage.models import UsageRecord
from delegation.usage.selectors import usage_report, usage_top_turns, usage_total
from delegation.usage.serializers import (
    CostlyTurnSerializer,
    MyReportQuerySerializer,
    StaffReportQuerySerializer,
    TurnsQuerySerializer,
    UsageReportSerializer,
)


def _query(serializer_class: type[Serializer], request: Request) -> dict[str, Any]:
    # A plain dict, not the QueryDict: DRF reads `?to=` in a QueryDict as "not given".
    query = serializer_class(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


def _report(query: dict[str, Any], user: Any = None) -> dict[str, Any]:
    start, end = query["from"], query["to"]
    return {
        "group_by": query["group_by"],
        "from": start,
        "to": end,
        "rows": usage_report(group_by=query["group_by"], start=start, end=end, user=user),
        "totals": usage_total(start=start, end=end, user=user),
    }


class UsageReportView(APIView):
    """Tokens and cost of every user's model calls, grouped (usage.view_usagerecord, as the
    admin's cost dashboard)."""

    permission_classes = [ModelPermissions]
    permission_model = UsageRecord

    @extend_schema(
        operation_id="usage_report",
        parameters=[StaffReportQuerySerializer],
        responses={200: UsageReportSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Totals per day, agent, user, session or model for the period (default: the last
        30 days), summed from the ledger; costs are decimal strings."""
        query = _query(StaffReportQuerySerializer, request)
        return Response(UsageReportSerializer(_report(query)).data)


class MyUsageView(APIView):
    """The caller's own usage."""

    @extend_schema(
        operation_id="usage_mine",
        parameters=[MyReportQuerySerializer],
        responses={200: UsageReportSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """The caller's model calls (their turns, delegations included), grouped per day,
        agent, session or model."""
        query = _query(MyReportQuerySerializer, request)
        return Response(UsageReportSerializer(_report(query, user=request.user)).data)


class CostlyTurnsView(APIView):
    """The costliest turns with the cost of every run of their trees
    (usage.view_usagerecord)."""

    permission_classes = [ModelPermissions]
    permission_model = UsageRecord

    @extend_schema(
        operation_id="usage_turns",
        parameters=[TurnsQuerySerializer],
        responses={200: CostlyTurnSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """The period's costliest turns, costliest first."""
        query = _query(TurnsQuerySerializer, request)
        turns = usage_top_turns(start=query["from"], end=query["to"], limit=query["limit"])
        return Response(CostlyTurnSerializer(turns, many=True).data)
