"""REST endpoints of the user's own watches (list, mute or unmute one) and notification
settings (quiet hours, daily cap, channels)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import time
from typing import Any

from django.core.validators import RegexValidator
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import ERRORS
from config.api_fields import StrictBooleanField, StrictCharField, StrictIntegerField
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

    muted = StrictBooleanField()


_CLOCK = RegexValidator(r"^([01][0-9]|2[0-3]):[0-5][0-9]$", message="Write HH:MM (24-hour).")


class ClockField(StrictCharField):
    """A wall-clock time as "HH:MM" (24-hour)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [_CLOCK]  # the one pattern the schema shows (it implies not blank)

    def to_representation(self, value: Any) -> str:
        """The time as HH:MM."""
        return value.strftime("%H:%M") if isinstance(value, time) else str(value)


class QuietHoursSerializer(serializers.Serializer):
    """From `start` until `end` (HH:MM in the user's timezone; may span midnight)."""

    start = ClockField()
    end = ClockField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The two ends as times."""
        return {name: time.fromisoformat(value) for name, value in attrs.items()}


class NotificationSettingsSerializer(serializers.Serializer):
    """Quiet hours (null: none), the most notifications a day, and where they go besides the
    chat."""

    quiet_hours = QuietHoursSerializer(allow_null=True)
    daily_cap = StrictIntegerField(min_value=1, max_value=1000)
    email = StrictBooleanField()
    linked_chats = StrictBooleanField()


def _settings(saved: Any) -> dict[str, Any]:
    quiet = None
    if saved.quiet_start is not None and saved.quiet_end is not None:
        quiet = {"start": saved.quiet_start, "end": saved.quiet_end}
    return NotificationSettingsSerializer(
        {
            "quiet_hours": quiet,
            "daily_cap": saved.daily_cap,
            "email": saved.email,
            "linked_chats": saved.linked_chats,
        }
    ).data


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
        return Response(_settings(notification_settings_of(user=request.user)))

    @extend_schema(
        operation_id="notification_settings_update",
        request=NotificationSettingsSerializer,
        responses={200: NotificationSettingsSerializer, **ERRORS},
    )
    def put(self, request: Request) -> Response:
        """Replace the settings."""
        body = NotificationSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        quiet = fields.pop("quiet_hours") or {}
        saved = notification_settings_update(
            user=request.user, quiet_start=quiet.get("start"), quiet_end=quiet.get("end"), **fields
        )
        return Response(_settings(saved))
