"""REST of the user's own watches and notification settings: own only (another's id is 404),
mute and unmute, settings validated, and the schema documents them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from reminders.watches.models import WatchState
from tests.api.conftest import token_client
from tests.watches.conftest import CHECK

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_api(alice):
    return token_client(alice)


@pytest.fixture
def bob_api(bob):
    return token_client(bob)


def test_the_user_lists_their_watches_with_schedule_in_words_and_next_run(watch, alice_api):
    body = alice_api.get("/api/v1/watches/").json()
    assert [w["name"] for w in body] == ["Overdue tasks"]
    row = body[0]
    assert row["check"] == CHECK and row["expert"] == "Planner"
    assert row["schedule"] == "every day at 09:00 (UTC)"
    assert row["next_run_at"] and row["muted"] is False


def test_a_watch_reaches_a_user_through_their_group(watch, bob, bob_api):
    group = Group.objects.create(name="accounts")
    bob.groups.add(group)
    assert bob_api.get("/api/v1/watches/").json() == []
    watch.groups.add(group)
    assert [w["id"] for w in bob_api.get("/api/v1/watches/").json()] == [watch.pk]


def test_mute_and_unmute(watch, alice, alice_api):
    url = f"/api/v1/watches/{watch.pk}/"
    assert alice_api.patch(url, {"muted": True}, format="json").json()["muted"] is True
    assert WatchState.objects.get(watch=watch, user=alice).muted
    assert alice_api.get(url).json()["muted"] is True
    assert alice_api.patch(url, {"muted": False}, format="json").json()["muted"] is False


def test_another_users_watch_is_not_found(watch, bob_api):
    url = f"/api/v1/watches/{watch.pk}/"
    for response in (bob_api.get(url), bob_api.patch(url, {"muted": True}, format="json")):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
    assert not WatchState.objects.exists()
    assert bob_api.get("/api/v1/watches/").json() == []


def test_a_bad_mute_body_is_refused(watch, alice_api):
    response = alice_api.patch(f"/api/v1/watches/{watch.pk}/", {"muted": "loud"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"


def test_notification_settings_are_the_users_own(alice_api, bob_api):
    url = "/api/v1/notifications/settings/"
    assert alice_api.get(url).json() == {
        "quiet_hours": None,
        "daily_cap": 10,
        "email": False,
        "linked_chats": True,
    }
    saved = {
        "quiet_hours": {"start": "22:00", "end": "07:30"},
        "daily_cap": 3,
        "email": True,
        "linked_chats": False,
    }
    assert alice_api.put(url, saved, format="json").json() == saved
    assert alice_api.get(url).json() == saved
    assert bob_api.get(url).json()["daily_cap"] == 10  # not alice's


@pytest.mark.parametrize(
    "body",
    [
        {"quiet_hours": {"start": "22:00"}, "daily_cap": 3},
        {"quiet_hours": None, "daily_cap": 0},
        {"quiet_hours": {"start": "25:00", "end": "07:00"}, "daily_cap": 3},
        {"quiet_hours": {"start": "22:00", "end": "7"}, "daily_cap": 3},
        {"quiet_hours": None, "daily_cap": "3"},
    ],
)
def test_bad_settings_are_refused_and_change_nothing(alice_api, body):
    url = "/api/v1/notifications/settings/"
    response = alice_api.put(url, {"email": False, "linked_chats": True, **body}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert alice_api.get(url).json()["daily_cap"] == 10


def test_the_schema_documents_the_endpoints(alice_api):
    schema = alice_api.get("/api/schema/", {"format": "json"}).json()
    assert {"/api/v1/watches/", "/api/v1/watches/{watch_id}/"} <= schema["paths"].keys()
    settings = schema["paths"]["/api/v1/notifications/settings/"]
    assert {"get", "put"} <= settings.keys()
    assert settings["put"]["tags"] == ["Watches"]
