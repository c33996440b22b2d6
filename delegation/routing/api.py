"""REST endpoints of routing: what routing remembers of a session, to read and to clear; the
routing statistics, for staff."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.selectors import access_session
from config.api_errors import ERRORS
from config.permissions import ModelPermissions
from delegation.routing.memory import memory_clear, memory_shown
from delegation.routing.models import RoutingStat
from delegation.routing.selectors import memory_of, stats_rows


class MemorySerializer(serializers.Serializer):
    """A session's routing memory, as its owner reads it (in the request's language)."""

    last_intent = serializers.CharField(
        allow_null=True,
        help_text="The last kind of question in words: the expert it went to, by the name "
        "people read in the request's language, else what its mode means.",
    )
    interested_topics = serializers.ListField(child=serializers.CharField())
    visited_docs = serializers.ListField(child=serializers.DictField())
    last_project_focus = serializers.CharField(allow_null=True)


class SessionMemoryView(APIView):
    """What routing remembers of one of the user's sessions."""

    @extend_schema(
        operation_id="sessions_memory_retrieve", responses={200: MemorySerializer, **ERRORS}
    )
    def get(self, request: Request, session_id: uuid.UUID) -> Response:
        """Intents, topics and documents routing remembers (empty when nothing is), in the
        request's language."""
        session = access_session(request.user, session_id)
        memory = memory_of(session=session, user=request.user)
        data = memory.data if memory else {}
        return Response(memory_shown(data=data, language=get_language()))

    @extend_schema(operation_id="sessions_memory_clear", responses={204: None, **ERRORS})
    def delete(self, request: Request, session_id: uuid.UUID) -> Response:
        """Forget it."""
        memory_clear(session=access_session(request.user, session_id), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class StatsPermission(ModelPermissions):
    """Staff who may view routing statistics (`routing.view_routingstat`, as the admin's page
    asks): they cover every user's turns."""

    message = _(
        "Routing statistics are for staff members who may view them (routing.view_routingstat)."
    )


class StatsQuerySerializer(serializers.Serializer):
    """The statistics' filters."""

    entry = serializers.SlugField(required=False, max_length=100, help_text="An entry agent.")
    expert = serializers.SlugField(
        required=False, max_length=100, help_text='An expert ("self": the entry agent itself).'
    )
    intent = serializers.SlugField(
        required=False, max_length=100, help_text='A routing rule\'s name, or "none".'
    )
    days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=366,
        help_text="The last this many days (default: ROUTING_STATS_WINDOW_DAYS).",
    )


class StatRowSerializer(serializers.Serializer):
    """How an entry agent's delegations to an expert went for one intent, with rates in
    percent (null: nothing to rate)."""

    entry = serializers.CharField()
    expert = serializers.CharField()
    intent = serializers.CharField()
    delegations = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    validation_passed = serializers.IntegerField()
    validation_failed = serializers.IntegerField()
    rated_up = serializers.IntegerField()
    rated_down = serializers.IntegerField()
    fell_back = serializers.IntegerField()
    refused = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True)
    validation_rate = serializers.FloatField(allow_null=True)
    rating_rate = serializers.FloatField(allow_null=True)
    good_rate = serializers.FloatField(
        allow_null=True, help_text="Validated or rated up, out of those judged."
    )


class StatsSerializer(serializers.Serializer):
    """The statistics over a period."""

    days = serializers.IntegerField()
    rows = StatRowSerializer(many=True)


class RoutingStatsView(APIView):
    """Routing statistics per entry agent, expert and intent (routing.view_routingstat)."""

    permission_classes = [StatsPermission]
    permission_model = RoutingStat

    @extend_schema(
        operation_id="routing_stats",
        parameters=[StatsQuerySerializer],
        responses={200: StatsSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Delegations, successes, verdicts, ratings, fallbacks and refusals over the last
        `days` days, filtered; the most delegations first."""
        query = StatsQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        filters = dict(query.validated_data)
        days = filters.pop("days", settings.ROUTING_STATS_WINDOW_DAYS)
        rows = stats_rows(days=days, **filters)
        return Response(StatsSerializer({"days": days, "rows": rows}).data)
