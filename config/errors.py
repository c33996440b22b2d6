"""The application error type, its codes, and the DRF handler that gives every API error one shape."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class AppError(Exception):
    """An error a client should see: a stable code, a plain message, optional details."""

    status = 400

    def __init__(
        self, code: str, message: str, *, details: Any = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        if status is not None:
            self.status = status

    def as_dict(self) -> dict[str, Any]:
        """The `{"code", "message", "details"}` body shared by REST and websocket errors."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


class NotFound(AppError):
    """A missing object, or one the user may not see (the two are indistinguishable on purpose)."""

    status = 404

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}_not_found", f"No such {what.replace('_', ' ')}.")


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render AppError and DRF errors as `{"error": {"code", "message", "details"}}`."""
    if isinstance(exc, AppError):
        return Response({"error": exc.as_dict()}, status=exc.status)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, drf_exceptions.ValidationError):
        body = {"code": "invalid", "message": "Some fields are invalid.", "details": response.data}
    else:
        detail = getattr(exc, "detail", "")
        code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
        body = {"code": str(code), "message": str(detail)}
    response.data = {"error": body}
    return response
