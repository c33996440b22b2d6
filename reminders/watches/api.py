"""REST endpoints of the user's own watches (list, mute or unmute one) and notification
settings (quiet hours, daily cap, channels)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import ERRORS
from config.errors import AppError
from reminders.watches.selectors import access_watch, watch_seen, watches_of
from reminders.watches.services import (
    notification_settings_of,
    notification_settings_update,
    watch_mute,
)


class WatchSerializer(serializers.Serializer):
    """A watch as its user sees it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    expert = serializers.CharField()
    check = serializers.CharField()
    schedule = serializers.CharField(help_text="The schedule in words, with its timezone.")
    next_run_at = serializers.DateTimeField(allow_null=True)
    enabled = serializers.BooleanField()
    muted = serializers.BooleanField()


class WatchMuteSerializer(serializers.Serializer):
    """Mute (true) or unmute (false) the watch for the requesting user."""

    muted = serializers.BooleanField()


class NotificationSettingsSerializer(serializers.Serializer):
    """Quiet hours (HH:MM in the user's timezone; both or neither), the most notifications a
    day, and where they go besides the chat."""

    quiet_start = serializers.TimeField(allow_null=True, format="%H:%M")
    quiet_end = serializers.TimeField(allow_null=True, format="%H:%M")
    daily_cap = serializers.IntegerField(min_value=1, max_value=1000)
    email = serializers.BooleanField()
    linked_chats = serializers.BooleanField()


def _watch(seen: Any) -> dict[str, Any]:
    return WatchSerializer(asdict(seen)).data


class WatchListView(APIView):
    """The watches that check for the requesting user."""

    @extend_schema(operation_id="watches_list", responses={200: WatchSerializer(many=True)})
    def get(self, request: Request) -> Response:
        """The user's watches, with their schedule in words, next run and mute state."""
        seen = watches_of(user=request.user, now=timezone.now())
        return Response([_watch(watch) for watch in seen])


class WatchDetailView(APIView):
    """One of the user's watches: read it, mute or unmute it."""

    @extend_schema(operation_id="watches_read", responses={200: WatchSerializer, **ERRORS})
    def get(self, request: Request, watch_id: int) -> Response:
        """The watch (404 when it does not check for this user)."""
        watch = access_watch(request.user, watch_id)
        return Response(_watch(watch_seen(watch=watch, user=request.user, now=timezone.now())))

    @extend_schema(
        operation_id="watches_mute",
        request=WatchMuteSerializer,
        responses={200: WatchSerializer, **ERRORS},
    )
    def patch(self, request: Request, watch_id: int) -> Response:
        """Mute or unmute: a muted watch's findings are recorded, not told to this user."""
        watch = access_watch(request.user, watch_id)
        body = WatchMuteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        watch_mute(watch=watch, user=request.user, muted=body.validated_data["muted"])
        return Response(_watch(watch_seen(watch=watch, user=request.user, now=timezone.now())))


class NotificationSettingsView(APIView):
    """The requesting user's notification settings."""

    @extend_schema(
        operation_id="notification_settings_read",
        responses={200: NotificationSettingsSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """The settings (the defaults when never set)."""
        current = notification_settings_of(user=request.user)
        return Response(NotificationSettingsSerializer(current).data)

    @extend_schema(
        operation_id="notification_settings_update",
        request=NotificationSettingsSerializer,
        responses={200: NotificationSettingsSerializer, **ERRORS},
    )
    def put(self, request: Request) -> Response:
        """Replace the settings; quiet hours need both ends (or neither)."""
        body = NotificationSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            saved = notification_settings_update(user=request.user, **body.validated_data)
        except ValueError as exc:
            raise AppError("invalid", str(exc), details={"quiet_end": str(exc)}) from exc
        return Response(NotificationSettingsSerializer(saved).data)
