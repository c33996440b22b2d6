"""REST endpoints of the user's own tasks and reminders (the tasks page uses them): list,
edit (title, day, times, reminder time), complete, delete; move or cancel a reminder."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import ERRORS, ErrorSerializer
from config.errors import AppError
from reminders import clock
from reminders.outcome import Outcome
from reminders.overview import planner_overview, reminder_row, task_row
from reminders.selectors import access_reminder, access_task, planner_origins
from reminders.services.edits import task_edit
from reminders.services.reminders import reminder_cancel, reminder_move
from reminders.services.todos import task_finish, task_remove

_ROW = inline_serializer(
    "PlannerRow",
    {
        "kind": serializers.ChoiceField(choices=["task", "reminder"]),
        "id": serializers.IntegerField(),
        "title": serializers.CharField(),
        "group": serializers.ChoiceField(choices=["upcoming", "overdue", "done"]),
        "status": serializers.CharField(),
        "reminder": serializers.DictField(allow_null=True),
        "chat": serializers.DictField(allow_null=True),
    },
)
_OVERVIEW = inline_serializer(
    "PlannerOverview",
    {
        "timezone": serializers.CharField(),
        "today": serializers.DateField(),
        "upcoming": serializers.ListField(child=serializers.DictField()),
        "overdue": serializers.ListField(child=serializers.DictField()),
        "done": serializers.ListField(child=serializers.DictField()),
    },
)
_DONE = inline_serializer("PlannerDone", {"message": serializers.CharField(), "item": _ROW})


class TaskEditSerializer(serializers.Serializer):
    """A task's changes; a missing key keeps its value. Times are wall-clock in the user's
    timezone; `remind_at` null cancels the reminder."""

    title = serializers.CharField(max_length=200, required=False)
    date = serializers.DateField(required=False)
    start = serializers.TimeField(required=False, allow_null=True)
    end = serializers.TimeField(required=False, allow_null=True)
    notes = serializers.CharField(required=False, allow_blank=True)
    remind_at = serializers.DateTimeField(
        required=False, allow_null=True, default_timezone=None, input_formats=["%Y-%m-%dT%H:%M"]
    )
    confirm = serializers.BooleanField(required=False, default=False)


class ReminderMoveSerializer(serializers.Serializer):
    """A reminder's new wall-clock time in the user's timezone, YYYY-MM-DDTHH:MM."""

    remind_at = serializers.DateTimeField(default_timezone=None, input_formats=["%Y-%m-%dT%H:%M"])


def _refused(outcome: Outcome) -> AppError:
    """A planner outcome that did nothing, as an API error: a clash or a question back is 409
    (send again with confirm=true), anything else 400; the message says why."""
    clash = outcome.status in ("conflict", "need_confirmation")
    return AppError(
        "conflict" if clash else "invalid",
        outcome.message,
        details={"status": outcome.status, "confirmable": clash},
        status=409 if clash else 400,
    )


def _zone_and_now(request: Request) -> tuple[Any, Any]:
    now = clock.now()
    return clock.local_now(request.user, now)[1], now


def _task_item(request: Request, task: Any) -> dict[str, Any]:
    zone, now = _zone_and_now(request)
    reminders = list(task.reminders.order_by("remind_at", "id"))
    origins = planner_origins(user=request.user)
    return task_row(task, reminders, origins, zone, now.astimezone(zone).date())


class PlannerView(APIView):
    """The user's tasks and reminders, grouped as the tasks page shows them."""

    @extend_schema(operation_id="planner_list", responses={200: _OVERVIEW, **ERRORS})
    def get(self, request: Request) -> Response:
        """Upcoming (soonest first), overdue, then done and cancelled (newest first)."""
        zone, now = _zone_and_now(request)
        return Response(planner_overview(user=request.user, zone=zone, now=now))


class TaskDetailView(APIView):
    """One of the user's tasks: edit or delete it."""

    @extend_schema(
        operation_id="planner_task_edit",
        request=TaskEditSerializer,
        responses={200: _DONE, 409: ErrorSerializer, **ERRORS},
    )
    def patch(self, request: Request, task_id: int) -> Response:
        """Change the title, day, times or reminder time; a clash is 409 until confirmed."""
        task = access_task(request.user, task_id)
        body = TaskEditSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        confirm = changes.pop("confirm", False)
        zone, now = _zone_and_now(request)
        outcome = task_edit(task=task, changes=changes, zone=zone, now=now, confirm=confirm)
        if outcome.status != "success":
            raise _refused(outcome)
        task.refresh_from_db()
        return Response({"message": outcome.message, "item": _task_item(request, task)})

    @extend_schema(operation_id="planner_task_delete", responses={204: None, **ERRORS})
    def delete(self, request: Request, task_id: int) -> Response:
        """Delete the task; its pending reminders are cancelled."""
        task_remove(task=access_task(request.user, task_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TaskCompleteView(APIView):
    """Mark one of the user's tasks done."""

    @extend_schema(
        operation_id="planner_task_complete", request=None, responses={200: _DONE, **ERRORS}
    )
    def post(self, request: Request, task_id: int) -> Response:
        """Done; its pending reminders are cancelled. Already done: nothing changes."""
        task = access_task(request.user, task_id)
        message = ""
        if task.status != "done":
            message = task_finish(task=task, now=clock.now()).message
        task.refresh_from_db()
        return Response({"message": message, "item": _task_item(request, task)})


class ReminderDetailView(APIView):
    """One of the user's reminders: move it."""

    @extend_schema(
        operation_id="planner_reminder_move",
        request=ReminderMoveSerializer,
        responses={200: _DONE, **ERRORS},
    )
    def patch(self, request: Request, reminder_id: int) -> Response:
        """Move a pending reminder to another time (not one already past)."""
        reminder = access_reminder(request.user, reminder_id)
        body = ReminderMoveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        zone, now = _zone_and_now(request)
        at = body.validated_data["remind_at"]
        outcome = reminder_move(reminder=reminder, at=at, zone=zone, now=now)
        if outcome.status != "success":
            raise _refused(outcome)
        return Response({"message": outcome.message, "item": _reminder_item(request, reminder)})


class ReminderCancelView(APIView):
    """Cancel one of the user's reminders."""

    @extend_schema(
        operation_id="planner_reminder_cancel", request=None, responses={200: _DONE, **ERRORS}
    )
    def post(self, request: Request, reminder_id: int) -> Response:
        """Cancel a pending reminder; a sent one cannot be (400)."""
        reminder = access_reminder(request.user, reminder_id)
        zone, _now = _zone_and_now(request)
        outcome = reminder_cancel(user=request.user, reminder_id=reminder.pk, zone=zone)
        if outcome.status != "success":
            raise _refused(outcome)
        return Response({"message": outcome.message, "item": _reminder_item(request, reminder)})


def _reminder_item(request: Request, reminder: Any) -> dict[str, Any]:
    """The row the page redraws: the reminder's task, or the reminder itself."""
    reminder.refresh_from_db()
    if reminder.task is not None:
        return _task_item(request, reminder.task)
    zone, now = _zone_and_now(request)
    origins = planner_origins(user=request.user)
    return reminder_row(reminder, origins, zone, now.astimezone(zone).date())
