"""The API's error shape for the OpenAPI schema, shared by every app's API views."""

from __future__ import annotations

from rest_framework import serializers


class ErrorBodySerializer(serializers.Serializer):
    """`{"code", "message", "details"}`."""

    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField(required=False)


class ErrorSerializer(serializers.Serializer):
    """Every error: `{"error": {...}}`."""

    error = ErrorBodySerializer()


# The error answers every authenticated endpoint may give (bad input, auth, not found, throttled).
ERRORS: dict[int, type[ErrorSerializer]] = {
    code: ErrorSerializer for code in (400, 401, 403, 404, 429)
}
