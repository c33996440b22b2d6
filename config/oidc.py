"""Sign-in with the company's identity provider (OpenID Connect, through mozilla-django-oidc):
its endpoints found from the issuer's discovery document, and each person's Django groups
(which gate experts and knowledge) and staff flag taken from their group claim at every
sign-in. Local accounts keep working beside it (docs/operations.md, *Sign-in*)."""

from __future__ import annotations

import logging
import threading
import unicodedata
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

logger = logging.getLogger(__name__)

# A setting left blank is read from the issuer's discovery document under this name.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class _Discovery:
    """The issuer's discovery document, fetched once per process when first needed (a failed
    fetch is tried again at the next sign-in)."""

    lock = threading.Lock()
    document: dict[str, Any] | None = None


def discovery() -> dict[str, Any]:
    """`<OIDC_ISSUER>/.well-known/openid-configuration`, checked to be the issuer's own."""
    with _Discovery.lock:
        if _Discovery.document is None:
            issuer = settings.OIDC_ISSUER.rstrip("/")
            response = requests.get(
                f"{issuer}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT
            )
            response.raise_for_status()
            document = response.json()
            if str(document.get("issuer", "")).rstrip("/") != issuer:
                raise ImproperlyConfigured(
                    f"the discovery document names issuer {document.get('issuer')!r}, "
                    f"not OIDC_ISSUER {issuer!r}"
                )
            _Discovery.document = document
        return _Discovery.document


def oidc_setting(name: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting: the configured value, else the discovered endpoint."""
    value = import_from_settings(name, *default)
    if not value and name in DISCOVERED and settings.OIDC_ISSUER:
        return discovery().get(DISCOVERED[name]) or value
    return value


class SignInRequestView(OIDCAuthenticationRequestView):
    """The redirect to the identity provider, its endpoint discovered."""

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        """A setting, or the discovered endpoint (`oidc_setting`)."""
        return oidc_setting(attr, *args)


class SignInCallbackView(OIDCAuthenticationCallbackView):
    """The identity provider's redirect back: the code becomes a signed-in user."""

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        """A setting, or the discovered endpoint (`oidc_setting`)."""
        return oidc_setting(attr, *args)


class GroupClaimsBackend(OIDCAuthenticationBackend):
    """Users from the provider's claims: matched by verified email, named by their preferred
    username, with the groups and staff flag their group claim gives, set at each sign-in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Nothing read yet: Django makes a backend for every password sign-in and session,
        and those must not wait on (or fail with) the provider."""
        self.UserModel = get_user_model()

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        """A setting, or the discovered endpoint (`oidc_setting`)."""
        return oidc_setting(attr, *args)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        """A user from the provider's callback (a code and a state); None for anything else."""
        if request is None or not request.GET.get("code") or not request.GET.get("state"):
            return None
        super().__init__()  # the endpoints and keys, discovered now
        try:
            return super().authenticate(request, **kwargs)
        except SuspiciousOperation as exc:  # a forged or mangled answer: nobody signs in
            logger.warning("OIDC sign-in refused: %s", exc)
            return None

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        """An email the provider has not marked unverified."""
        return bool(claims.get("email")) and claims.get("email_verified", True) is not False

    def get_username(self, claims: dict[str, Any]) -> str:
        """The preferred username (else the email), unique among the users: a local account
        of the same name is never taken over."""
        base = str(claims.get("preferred_username") or claims["email"])
        base = unicodedata.normalize("NFKC", base)[:140] or "user"
        name, number = base, 1
        while self.UserModel.objects.filter(username=name).exists():
            number += 1
            name = f"{base}-{number}"
        return name

    def create_user(self, claims: dict[str, Any]) -> Any:
        """A new user, without a usable password (they sign in through the provider)."""
        with transaction.atomic():
            user = self.UserModel.objects.create_user(
                self.get_username(claims), email=claims["email"]
            )
            return self.update_user(user, claims)

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        """Names, staff flag and groups from the claims. Groups the claim maps to are the
        user's groups: the provider owns membership of everyone who signs in through it."""
        groups = claimed_groups(claims)
        user.first_name = str(claims.get("given_name", user.first_name))[:150]
        user.last_name = str(claims.get("family_name", user.last_name))[:150]
        user.is_staff = bool(set(settings.OIDC_STAFF_GROUPS) & set(_claim_values(claims)))
        with transaction.atomic():
            user.save(update_fields=["first_name", "last_name", "is_staff"])
            user.groups.set(groups)
        return user


def _claim_values(claims: dict[str, Any]) -> list[str]:
    """The group claim's values (a list, or one string)."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def claimed_groups(claims: dict[str, Any]) -> list[Group]:
    """The Django groups a person's group claim maps to: through OIDC_GROUP_MAP where it names
    the claim's value, else the group of the same name, if one exists (groups are made by
    admins: a claim never creates one)."""
    names = [settings.OIDC_GROUP_MAP.get(value, value) for value in _claim_values(claims)]
    return list(Group.objects.filter(name__in=names))


def sign_in_options(request: HttpRequest) -> dict[str, Any]:
    """Template context: `oidc_provider`, the provider's name for the sign-in button, when
    sign-in through it is configured."""
    return {"oidc_provider": settings.OIDC_PROVIDER_NAME if settings.OIDC_ENABLED else ""}
