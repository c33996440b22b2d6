"""Per-user API tokens: created and revoked by their owner, stored hashed, shown once."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from chat.models import ApiToken

PREFIX = "ap_"


def token_hash(raw: str) -> str:
    """How a token is stored: its SHA-256 (tokens are long and random, so no salt is needed)."""
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, user: Any, name: str) -> tuple[ApiToken, str]:
    """A new token for the user and its plain text, which is never stored or shown again."""
    raw = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name[:100], prefix=raw[:10], key_hash=token_hash(raw)
    )
    return token, raw


def token_revoke(*, token: ApiToken) -> None:
    """Revoke a token; requests with it fail from now on."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer ap_…` (or `Token ap_…`)."""

    keywords = ("bearer", "token")

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        """The token's user, or None when no token header is sent."""
        header = authentication.get_authorization_header(request).decode(errors="replace")
        parts = header.split()
        if not parts or parts[0].lower() not in self.keywords:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Send 'Authorization: Bearer <token>'.")
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=token_hash(parts[1]), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        """Makes unauthenticated API requests answer 401 rather than 403."""
        return 'Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describes the token scheme in the OpenAPI schema."""

    target_class = "chat.tokens.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        """HTTP bearer auth."""
        return {"type": "http", "scheme": "bearer"}
