"""Sign-in with the company's identity provider, against a local one over real HTTP
(discovery, authorization code with PKCE, token, userinfo, JWKS): people arrive with the
groups and staff flag their group claim gives, local accounts keep working, and a forged or
replayed answer signs nobody in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from config.oidc import _Discovery
from tests.factories import make_user
from tests.fake_idp import FakeIdP

pytestmark = pytest.mark.django_db


@pytest.fixture
def idp(settings) -> Iterator[FakeIdP]:
    provider = FakeIdP()
    settings.OIDC_ISSUER = provider.url
    settings.OIDC_RP_CLIENT_ID = provider.client_id
    settings.OIDC_RP_CLIENT_SECRET = provider.client_secret
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME = "Keycloak"
    settings.OIDC_GROUP_MAP = {"fin-team": "Finance"}
    settings.OIDC_STAFF_GROUPS = ["platform-admins"]
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.ModelBackend",
        "config.oidc.GroupClaimsBackend",
    ]
    _Discovery.document = None
    yield provider
    _Discovery.document = None
    provider.close()


def claims(**extra: Any) -> dict[str, Any]:
    return {
        "sub": "kc-1",
        "email": "mei@example.com",
        "email_verified": True,
        "preferred_username": "mei",
        "given_name": "Mei",
        "groups": ["fin-team", "HR"],
        **extra,
    }


def sign_in(client: Client, idp: FakeIdP, person: dict[str, Any], *, next_: str = "/") -> Any:
    """The whole round trip: the platform's redirect, the person at the provider, the
    callback; the callback's response."""
    start = client.get("/oidc/authenticate/", {"next": next_})
    assert start.status_code == 302 and start.url.startswith(f"{idp.url}/authorize?")
    code = idp.sign_in(start.url, person)
    state = parse_qs(urlsplit(start.url).query)["state"][0]
    return client.get("/oidc/callback/", {"code": code, "state": state})


def test_a_person_signs_in_with_the_groups_their_claim_maps_to(idp):
    finance, hr = Group.objects.create(name="Finance"), Group.objects.create(name="HR")
    client = Client()
    done = sign_in(client, idp, claims(), next_="/admin/")
    assert done.status_code == 302 and done.url == "/admin/"
    mei = get_user_model().objects.get(username="mei")
    assert (mei.email, mei.first_name, mei.is_staff, mei.is_superuser) == (
        "mei@example.com",
        "Mei",
        False,
        False,
    )
    assert set(mei.groups.all()) == {finance, hr}  # fin-team → Finance; HR by its own name
    assert not mei.has_usable_password()
    assert client.get("/").status_code == 200  # signed in: the chat page, not the sign-in page

    # Next time the provider says less, and more: the groups follow, staff from its group.
    sign_in(Client(), idp, claims(groups=["platform-admins", "Nonexistent"]))
    mei.refresh_from_db()
    assert list(mei.groups.all()) == [] and mei.is_staff
    assert not Group.objects.filter(name="Nonexistent").exists()  # a claim never makes one


def test_a_local_account_of_the_same_name_is_never_taken_over(idp):
    make_user("mei", email="someone-else@example.com")
    sign_in(Client(), idp, claims())
    assert get_user_model().objects.get(email="mei@example.com").username == "mei-2"


def test_an_unverified_email_signs_nobody_in(idp):
    done = sign_in(Client(), idp, claims(email_verified=False))
    assert done.url == "/accounts/login/?sso=failed"
    assert not get_user_model().objects.filter(email="mei@example.com").exists()


def test_a_forged_or_replayed_answer_signs_nobody_in(idp):
    client = Client()
    start = client.get("/oidc/authenticate/", {"next": "/"})
    code = idp.sign_in(start.url, claims())
    # A state that is not this browser's.
    assert client.get("/oidc/callback/", {"code": code, "state": "forged"}).status_code in (
        302,
        400,
    )
    assert "_auth_user_id" not in client.session
    # A token signed with another key than the provider's published one.
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    real = idp.id_token
    idp.id_token = lambda payload, key=None: real(payload, other)  # type: ignore[method-assign]
    done = sign_in(Client(), idp, claims())
    assert done.url == "/accounts/login/?sso=failed"
    assert not get_user_model().objects.filter(email="mei@example.com").exists()


def test_password_sign_in_works_without_asking_the_provider(idp, settings):
    make_user("local")  # password "pw"
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens: discovery would fail
    client = Client()
    done = client.post("/accounts/login/", {"username": "local", "password": "pw"})
    assert done.status_code == 302 and client.get("/").status_code == 200


def test_the_sign_in_pages_offer_the_provider_only_when_configured(idp, settings):
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Keycloak" in page and "/oidc/authenticate/" in page
    assert "Sign in with Keycloak" in Client().get("/admin/login/").content.decode()
    settings.OIDC_ENABLED = False
    assert "/oidc/authenticate/" not in Client().get("/accounts/login/").content.decode()
