"""Authentication, tokens, throttling and the one error shape."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from chat.models import ApiToken
from chat.tokens import token_hash

pytestmark = pytest.mark.django_db

# Fixed ids: parametrized test ids must be the same in every xdist worker.
SID = uuid.UUID("00000000-0000-4000-8000-0000000000a1")
RID = uuid.UUID("00000000-0000-4000-8000-0000000000b2")
ENDPOINTS = [
    ("get", "/api/v1/agents/"),
    ("post", "/api/v1/agents/"),
    ("get", "/api/v1/agents/available/"),
    ("get", "/api/v1/agents/x/"),
    ("patch", "/api/v1/agents/x/"),
    ("get", "/api/v1/tools/"),
    ("get", "/api/v1/sessions/"),
    ("post", "/api/v1/sessions/"),
    ("get", f"/api/v1/sessions/{SID}/"),
    ("patch", f"/api/v1/sessions/{SID}/"),
    ("delete", f"/api/v1/sessions/{SID}/"),
    ("get", f"/api/v1/sessions/{SID}/messages/"),
    ("post", f"/api/v1/sessions/{SID}/messages/"),
    ("get", f"/api/v1/sessions/{SID}/events/"),
    ("get", f"/api/v1/runs/{RID}/"),
    ("post", f"/api/v1/runs/{RID}/cancel/"),
    ("get", f"/api/v1/runs/{RID}/events/"),
    ("get", "/api/v1/tokens/"),
    ("post", "/api/v1/tokens/"),
    ("delete", "/api/v1/tokens/1/"),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_every_endpoint_refuses_anonymous_requests_with_401(method, url):
    response = getattr(APIClient(), method)(url, {}, format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


@pytest.mark.django_db(transaction=True)  # the event streams use database_sync_to_async
@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_a_bad_token_is_refused(method, url):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer ap_not-a-real-token")
    response = getattr(client, method)(url, {}, format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_token_is_shown_once_stored_hashed_and_can_be_revoked(user):
    client = APIClient()
    client.force_authenticate(user)
    created = client.post("/api/v1/tokens/", {"name": "portal"}, format="json")
    assert created.status_code == 201
    raw = created.json()["token"]
    stored = ApiToken.objects.get(pk=created.json()["id"])
    assert stored.key_hash == token_hash(raw) and raw not in str(stored.__dict__)
    listed = client.get("/api/v1/tokens/").json()
    assert listed[0]["prefix"] == raw[:10] and "token" not in listed[0]

    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert bearer.get("/api/v1/sessions/").status_code == 200
    assert client.delete(f"/api/v1/tokens/{stored.pk}/").status_code == 204
    assert bearer.get("/api/v1/sessions/").status_code == 401


def test_another_users_token_cannot_be_revoked(api, mallory_api, other_user):
    theirs = ApiToken.objects.filter(user=other_user).first()
    response = api.delete(f"/api/v1/tokens/{theirs.pk}/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "token_not_found"
    assert mallory_api.get("/api/v1/sessions/").status_code == 200


def test_browser_session_needs_csrf_for_writes(user):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get("/api/v1/sessions/").status_code == 200
    response = client.post("/api/v1/sessions/", {"title": "x"}, format="json")
    assert response.status_code == 403 and "CSRF" in response.json()["error"]["message"]


def test_requests_over_the_rate_are_throttled_with_the_error_shape(api, monkeypatch):
    from rest_framework.throttling import UserRateThrottle

    rates = {**UserRateThrottle.THROTTLE_RATES, "user": "3/minute"}
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", rates)
    codes = [api.get("/api/v1/sessions/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    response = api.get("/api/v1/sessions/")
    assert response.json()["error"]["code"] == "throttled" and "Retry-After" in response


def test_schema_and_docs_are_served_without_a_cdn(client):
    schema = client.get("/api/schema/")
    assert (
        schema.status_code == 200 and b"/api/v1/sessions/{session_id}/messages/" in schema.content
    )
    docs = client.get("/api/docs/").content.decode()
    assert "cdn" not in docs.lower() and "/static/drf_spectacular_sidecar/" in docs
    assert "<script>" not in docs  # init script from a URL, so the page CSP needs no inline script
