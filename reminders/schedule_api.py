"""REST endpoints of the user's own scheduled prompts (/api/v1/schedules/): list, create,
retrieve, change (text, schedule in words, agent, paused) and delete."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.models import Agent
from config.api_errors import ERRORS
from config.errors import AppError
from reminders import clock
from reminders.schedule_selectors import access_schedule, schedule_as_data, schedules_of
from reminders.services.schedule_requests import (
    PROMPT_MAX_CHARS,
    schedule_create,
    schedule_delete,
    schedule_update,
)


class ScheduleSerializer(serializers.Serializer):
    """A schedule as the owner reads it; times in their timezone."""

    id = serializers.IntegerField(read_only=True)
    text = serializers.CharField(help_text="What the agent is asked each time.")
    agent = serializers.CharField(help_text="The agent's name (its slug).")
    agent_name = serializers.CharField(read_only=True, help_text="Its name in your language.")
    schedule = serializers.CharField(help_text="When it runs, in words.")
    next_run_at = serializers.DateTimeField(read_only=True, allow_null=True)
    next_run = serializers.CharField(read_only=True, help_text="The next run, in words.")
    paused = serializers.BooleanField()
    by_email = serializers.BooleanField(help_text="Also mail each answer to you.")
    last_run_at = serializers.DateTimeField(read_only=True, allow_null=True)
    last_run_late = serializers.BooleanField(read_only=True)
    last_error = serializers.CharField(read_only=True)


class ScheduleWriteSerializer(serializers.Serializer):
    """A new schedule (text, agent, schedule required) or a change (any of them)."""

    text = serializers.CharField(max_length=PROMPT_MAX_CHARS)
    agent = serializers.CharField(max_length=100, help_text="The agent's name (its slug).")
    schedule = serializers.CharField(
        max_length=200,
        help_text="When it runs, in words: every Monday at 9, 每週一早上, 每月1號, weekdays "
        "08:30, or a crontab expression. Read in your timezone.",
    )
    paused = serializers.BooleanField(required=False, default=False)
    by_email = serializers.BooleanField(required=False, default=False)


def _agent(name: str) -> Agent:
    agent = Agent.objects.filter(name=name.strip()).first()
    if agent is None:
        message = _("No agent is called “%(name)s”.") % {"name": name}
        raise AppError("invalid", message, details={"agent": [message]})
    return agent


def _data(request: Request, scheduled: Any) -> dict[str, Any]:
    now = clock.now()
    return schedule_as_data(scheduled, clock.local_now(request.user, now)[1], now)


class ScheduleListView(APIView):
    """The user's schedules; create one."""

    @extend_schema(operation_id="schedules_list", responses={200: ScheduleSerializer(many=True)})
    def get(self, request: Request) -> Response:
        """Oldest first."""
        return Response([_data(request, s) for s in schedules_of(user=request.user)])

    @extend_schema(
        operation_id="schedules_create",
        request=ScheduleWriteSerializer,
        responses={201: ScheduleSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """A new schedule for an agent you may use; a schedule the words cannot say is 400."""
        body = ScheduleWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = body.validated_data
        made = schedule_create(
            user=request.user,
            agent=_agent(values["agent"]),
            prompt=values["text"],
            words=values["schedule"],
            by_email=values["by_email"],
        )
        if values["paused"]:
            schedule_update(scheduled=made.scheduled, paused=True)
        return Response(_data(request, made.scheduled), status=status.HTTP_201_CREATED)


class ScheduleDetailView(APIView):
    """One of the user's schedules (another user's id is 404)."""

    @extend_schema(operation_id="schedules_retrieve", responses={200: ScheduleSerializer, **ERRORS})
    def get(self, request: Request, schedule_id: int) -> Response:
        """The schedule."""
        return Response(_data(request, access_schedule(request.user, schedule_id)))

    @extend_schema(
        operation_id="schedules_update",
        request=ScheduleWriteSerializer,
        responses={200: ScheduleSerializer, **ERRORS},
    )
    def put(self, request: Request, schedule_id: int) -> Response:
        """Replace text, agent, schedule and paused."""
        return self._change(request, schedule_id, partial=False)

    @extend_schema(
        operation_id="schedules_partial_update",
        request=ScheduleWriteSerializer(partial=True),
        responses={200: ScheduleSerializer, **ERRORS},
    )
    def patch(self, request: Request, schedule_id: int) -> Response:
        """Change any of text, agent, schedule, paused (pause: {"paused": true})."""
        return self._change(request, schedule_id, partial=True)

    @extend_schema(operation_id="schedules_delete", responses={204: None, **ERRORS})
    def delete(self, request: Request, schedule_id: int) -> Response:
        """Delete it (the undo of the chat's confirmation); its chat and answers stay."""
        schedule_delete(scheduled=access_schedule(request.user, schedule_id))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _change(self, request: Request, schedule_id: int, *, partial: bool) -> Response:
        scheduled = access_schedule(request.user, schedule_id)
        body = ScheduleWriteSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        values = body.validated_data
        schedule_update(
            scheduled=scheduled,
            prompt=values.get("text"),
            words=values.get("schedule"),
            agent=_agent(values["agent"]) if "agent" in values else None,
            paused=values.get("paused") if "paused" in request.data or not partial else None,
            by_email=values.get("by_email") if "by_email" in request.data or not partial else None,
        )
        return Response(_data(request, access_schedule(request.user, schedule_id)))
