"""Sessions and messages over REST: scoped to their owner, validated, idempotent."""

from __future__ import annotations

import base64
import socket
import uuid
from urllib.parse import urlencode

import pytest

from chat.models import ChatMessage, ChatPreference, ChatSession
from chat.services import preference_set_timezone
from delegation.models import Run, RunStatus

pytestmark = pytest.mark.django_db


def test_create_with_client_uuid_is_idempotent_and_foreign_ids_conflict(
    api, mallory_api, entry_agent
):
    sid = str(uuid.uuid4())
    first = api.post("/api/v1/sessions/", {"id": sid, "title": "Plans"}, format="json")
    again = api.post("/api/v1/sessions/", {"id": sid}, format="json")
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"] == sid and first.json()["agent"] == "assistant"
    taken = mallory_api.post("/api/v1/sessions/", {"id": sid}, format="json")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "session_id_conflict"
    assert ChatSession.objects.count() == 1


def test_list_is_own_only_searchable_and_paginated(api, mallory_api, user, other_user, settings):
    for title in ("Budget 2027", "Trip", "budget review"):
        ChatSession.objects.create(id=uuid.uuid4(), user=user, title=title)
    ChatSession.objects.create(id=uuid.uuid4(), user=other_user, title="Budget secret")
    titles = {s["title"] for s in api.get("/api/v1/sessions/").json()["results"]}
    assert titles == {"Budget 2027", "Trip", "budget review"}
    found = {s["title"] for s in api.get("/api/v1/sessions/?search=budget").json()["results"]}
    assert found == {"Budget 2027", "budget review"}
    settings.API_PAGE_SIZE = 2
    from chat import api as chat_api

    chat_api.NewestFirst.page_size = 2
    try:
        page = api.get("/api/v1/sessions/").json()
        assert len(page["results"]) == 2 and page["next"]
        rest = api.get(page["next"]).json()
        assert len(rest["results"]) == 1 and rest["next"] is None
    finally:
        chat_api.NewestFirst.page_size = 50


@pytest.mark.parametrize("position", ["garbage", "2026-13-45 99:00:00+00:00", "2026-01-01\x00"])
def test_a_forged_cursor_is_an_invalid_cursor_not_a_server_error(api, user, position):
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="t")
    cursor = base64.b64encode(urlencode({"p": position}).encode()).decode()
    for url in ("/api/v1/sessions/", f"/api/v1/sessions/{session.id}/messages/"):
        response = api.get(url, {"cursor": cursor})
        assert response.status_code == 404, (url, response.content)
        assert response.json()["error"] == {"code": "not_found", "message": "Invalid cursor"}


def test_another_users_session_is_404_everywhere(api, mallory_api, other_user):
    theirs = ChatSession.objects.create(id=uuid.uuid4(), user=other_user, title="private")
    base = f"/api/v1/sessions/{theirs.id}/"
    for response in (
        api.get(base),
        api.patch(base, {"title": "mine"}, format="json"),
        api.delete(base),
        api.get(base + "messages/"),
        api.post(base + "messages/", {"text": "hi"}, format="json"),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "session_not_found"
    theirs.refresh_from_db()
    assert theirs.title == "private" and not theirs.messages.exists()


def test_an_empty_session_is_named_after_its_first_message(api, entry_agent):
    sid = api.post("/api/v1/sessions/", {}, format="json").json()["id"]
    api.post(f"/api/v1/sessions/{sid}/messages/", {"text": "Plan the offsite\nmore"}, format="json")
    api.post(f"/api/v1/sessions/{sid}/messages/", {"text": "second"}, format="json")
    assert api.get(f"/api/v1/sessions/{sid}/").json()["title"] == "Plan the offsite"


def test_rename_and_delete(api, user):
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="old")
    ChatMessage.objects.create(id=uuid.uuid4(), session=session, role="user", content="x")
    url = f"/api/v1/sessions/{session.id}/"
    assert api.patch(url, {"title": "  new  "}, format="json").json()["title"] == "new"
    bad = api.patch(url, {"title": ""}, format="json")
    assert bad.status_code == 400 and "title" in bad.json()["error"]["details"]
    assert api.delete(url).status_code == 204
    assert not ChatSession.objects.exists() and not ChatMessage.objects.exists()


def test_patch_without_a_title_is_a_no_op(api, user):
    # PATCH is partial and the schema makes `title` optional: `{}` changes nothing, it is no 400.
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="kept")
    before = ChatSession.objects.get(pk=session.pk).updated_at
    response = api.patch(f"/api/v1/sessions/{session.id}/", {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["title"] == "kept"
    assert ChatSession.objects.get(pk=session.pk).updated_at == before


@pytest.mark.django_db(transaction=True)
def test_each_message_keeps_the_senders_timezone_and_changes_it_when_it_moved(
    api, entry_agent, user, django_assert_max_num_queries
):
    url = f"/api/v1/sessions/{uuid.uuid4()}/messages/"
    for text, zone in [("one", "Asia/Taipei"), ("two", "Asia/Taipei"), ("three", "Europe/Paris")]:
        sent = api.post(url, {"text": text, "timezone": zone}, format="json")
        assert sent.status_code == 202, sent.json()
        assert ChatPreference.objects.get(user=user).timezone == zone
    assert ChatPreference.objects.filter(user=user).count() == 1
    with django_assert_max_num_queries(1):  # the same timezone again is only read
        preference_set_timezone(user=user, timezone_name="Europe/Paris")


@pytest.mark.django_db(transaction=True)
def test_send_answers_202_runs_the_turn_and_is_idempotent(api, entry_agent):
    sid, mid = uuid.uuid4(), uuid.uuid4()
    url = f"/api/v1/sessions/{sid}/messages/"
    sent = api.post(
        url, {"id": str(mid), "text": "what is 6*7?", "timezone": "Asia/Taipei"}, format="json"
    )
    assert sent.status_code == 202
    body = sent.json()
    assert body["message"]["id"] == str(mid) and body["duplicate"] is False
    run = Run.objects.get(pk=body["run_id"])
    assert run.status == RunStatus.SUCCEEDED and "= 42" in run.answer
    again = api.post(url, {"id": str(mid), "text": "what is 6*7?"}, format="json")
    assert again.status_code == 202 and again.json()["duplicate"] is True
    assert again.json()["run_id"] == body["run_id"]
    assert ChatMessage.objects.filter(pk=mid).count() == 1 and Run.objects.count() == 1

    messages = api.get(url).json()["results"]
    assert [m["role"] for m in messages] == ["user", "tool", "agent"]
    assert messages[2]["agent"]["name"] == "assistant" and messages[2]["model"] == "offline"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": "x" * 40_000}, "text"),
        ({"text": "hi", "id": "nope"}, "id"),
        ({"text": 5, "id": 7}, "id"),
    ],
)
def test_bad_message_bodies_get_400_with_field_errors(api, entry_agent, body, field):
    response = api.post(f"/api/v1/sessions/{uuid.uuid4()}/messages/", body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["details"]
    assert not ChatMessage.objects.exists()


def test_the_timezone_is_an_iana_name_in_the_schema_and_in_fact(api, client, entry_agent):
    # The schema said "any string" while the server refused unknown names: it lists them now.
    schema = client.get("/api/schema/?format=json", HTTP_HOST="localhost").json()
    fields = schema["components"]["schemas"]["MessageSendRequest"]["properties"]
    timezone = fields["timezone"]
    refs = [timezone.get("$ref")] + [part["$ref"] for part in timezone.get("allOf", [])]
    names = timezone.get("enum") or next(
        schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["enum"] for ref in refs if ref
    )
    assert "Asia/Taipei" in names and "Europe/Paris" in names and "Mars/Olympus" not in names
    body = {"text": "hi", "timezone": "Mars/Olympus"}
    response = api.post(f"/api/v1/sessions/{uuid.uuid4()}/messages/", body, format="json")
    assert response.status_code == 400
    assert "IANA" in response.json()["error"]["details"]["timezone"][0]
    assert not ChatMessage.objects.exists()


def test_non_json_body_is_refused(api, entry_agent):
    response = api.post(
        f"/api/v1/sessions/{uuid.uuid4()}/messages/",
        "text=hi",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_send_while_a_turn_runs_is_refused(api, user, entry_agent):
    sid = uuid.uuid4()
    api.post(f"/api/v1/sessions/{sid}/messages/", {"text": "first"}, format="json")
    Run.objects.update(status=RunStatus.RUNNING)
    response = api.post(f"/api/v1/sessions/{sid}/messages/", {"text": "second"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "turn_in_progress"


@pytest.mark.parametrize("spaces", ["\f", " \t\n", "\u3000"])  # the last: a CJK full-width space
def test_a_message_of_spaces_alone_is_refused_as_its_schema_says(api, entry_agent, spaces):
    sent = api.post(f"/api/v1/sessions/{uuid.uuid4()}/messages/", {"text": spaces}, format="json")
    assert sent.status_code == 400
    assert sent.json()["error"]["details"]["text"] == ["This field may not be blank."]
    schema = api.get("/api/schema/", {"format": "json"}).json()
    text = schema["components"]["schemas"]["MessageSendRequest"]["properties"]["text"]
    assert text["minLength"] == 1 and text["pattern"] == r"\S"  # what a client can check first
    assert not ChatMessage.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_send_while_redis_is_down_is_503_and_nothing_is_saved(api, entry_agent, settings):
    """The throttle's counters live in Redis: with Redis unreachable (a closed port here) a
    send answers 503 service_unavailable with Retry-After, not a 500, and saves nothing."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        }
    }
    sent = api.post(f"/api/v1/sessions/{uuid.uuid4()}/messages/", {"text": "hi"}, format="json")
    assert sent.status_code == 503
    assert sent.json()["error"]["code"] == "service_unavailable"
    assert sent["Retry-After"] == "5"
    assert ChatMessage.objects.count() == 0


@pytest.mark.django_db
def test_an_empty_format_is_an_unknown_format(api, user):
    """The schema lists the formats an endpoint serves; `?format=` names none of them."""
    assert api.get("/api/v1/sessions/?format=").status_code == 404
    assert api.get("/api/v1/sessions/?format=json").status_code == 200
