"""Sign-in with the company's identity provider in a real browser: the button on the sign-in
page, the provider's page, and back on the chat page as the person it named, in their
groups (against a local provider over HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from tests.e2e.conftest import screenshots
from tests.factories import make_agent
from tests.fake_idp import FakeIdP

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    provider = FakeIdP()
    yield provider
    provider.close()


def test_a_person_signs_in_through_the_provider_and_chats(idp, start_asgi_server, browser_page):
    make_agent("assistant", display_name="Assistant", is_entry=True)
    finance = Group.objects.create(name="Finance")
    idp.next_person = {
        "sub": "kc-7",
        "email": "mei@example.com",
        "email_verified": True,
        "preferred_username": "mei",
        "groups": ["fin-team"],
    }
    server = start_asgi_server(
        OIDC_ISSUER=idp.url,
        OIDC_RP_CLIENT_ID=idp.client_id,
        OIDC_RP_CLIENT_SECRET=idp.client_secret,
        OIDC_PROVIDER_NAME="Keycloak",
        OIDC_GROUP_MAP=json.dumps({"fin-team": "Finance"}),
    )
    page = browser_page
    page.goto(server.url + "/")
    button = page.get_by_role("link", name="Sign in with Keycloak")
    button.wait_for()
    screenshots(page, "sso-sign-in")
    button.click()
    page.wait_for_selector("#status[data-state=connected]")
    assert page.url == server.url + "/"
    mei = get_user_model().objects.get(username="mei")
    assert list(mei.groups.all()) == [finance]
    assert page.console_errors == []
