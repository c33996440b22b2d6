"""The watches page: the user's watches with mute and unmute, and their settings form."""

from __future__ import annotations

import pytest

from reminders.watches.models import NotificationSettings, WatchState

pytestmark = pytest.mark.django_db


def test_the_page_lists_the_users_watches_and_mutes_one(client, watch, alice):
    client.force_login(alice)
    page = client.get("/watches/")
    assert page.status_code == 200
    assert "Overdue tasks" in page.text and "every day at 09:00 (UTC)" in page.text
    response = client.post(f"/watches/{watch.pk}/mute/", {"muted": "true"})
    assert response.status_code == 302
    assert WatchState.objects.get(watch=watch, user=alice).muted
    assert "Unmute" in client.get("/watches/").text


def test_another_users_watch_cannot_be_muted_from_the_page(client, watch, bob):
    client.force_login(bob)
    assert "Overdue tasks" not in client.get("/watches/").text
    assert client.post(f"/watches/{watch.pk}/mute/", {"muted": "true"}).status_code == 404
    assert not WatchState.objects.exists()


def test_the_settings_form_saves_and_refuses_half_quiet_hours(client, alice):
    client.force_login(alice)
    fields = {"quiet_start": "22:00", "quiet_end": "", "daily_cap": "4"}
    assert client.post("/watches/", fields).status_code == 200  # shown again with the error
    assert not NotificationSettings.objects.exists()
    fields["quiet_end"] = "07:00"
    assert client.post("/watches/", fields).status_code == 302
    saved = NotificationSettings.objects.get(user=alice)
    assert (saved.daily_cap, str(saved.quiet_end)) == (4, "07:00:00")
