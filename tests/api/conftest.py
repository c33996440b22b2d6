"""API test fixtures: clients authenticated by token or session."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from chat.tokens import token_create


def token_client(user) -> APIClient:
    """A client sending `Authorization: Bearer <a new token of user>`."""
    _, raw = token_create(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def api(user) -> APIClient:
    """Alice, by API token."""
    return token_client(user)


@pytest.fixture
def mallory_api(other_user) -> APIClient:
    """Another user, by API token."""
    return token_client(other_user)


@pytest.fixture
def staff_api(db) -> APIClient:
    """A staff user who may view, add and change agents (as in the admin), by API token."""
    from tests.factories import grant, make_user, model_perms

    staffer = make_user("staffer", is_staff=True)
    return token_client(grant(staffer, *model_perms("agents.agent", actions="view add change")))


@pytest.fixture(autouse=True)
def _sync_tasks(settings):
    """Turns started through the API run on commit in the request's thread: deterministic."""
    settings.TASKS_RUN_SYNC = True
