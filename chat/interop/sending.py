"""The REST API's `send` rate (API_THROTTLE_SEND) for messages that come through the other doors."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView


class _Sending(APIView):
    """As the REST API's sending views are to its throttle."""

    throttle_scope = "send"


def wait_before_sending(user: Any) -> float | None:
    """None if the user may send a message now, else the seconds to wait (counts the message).
    Raises RedisError when the rate's counters cannot be reached."""
    request = Request(HttpRequest())
    request.user = user
    throttle = ScopedRateThrottle()
    if throttle.allow_request(request, _Sending()):
        return None
    return max(1.0, throttle.wait() or 1.0)
