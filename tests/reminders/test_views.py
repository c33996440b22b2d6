"""The tasks page (/tasks/): login required, only the user's own items, in their language."""

from __future__ import annotations

import json

import pytest

from tests.reminders.conftest import call, user_in

pytestmark = pytest.mark.django_db


def page_data(page: str) -> dict:
    """The list the page's script draws (its json_script)."""
    return json.loads(page.split('id="planner-data" type="application/json">')[1].split("<")[0])


def test_the_page_needs_a_login(client):
    answer = client.get("/tasks/")
    assert answer.status_code == 302 and "/accounts/login/" in answer["Location"]


def test_the_page_lists_only_the_users_own_tasks(client, taipei_user, clock):
    call(taipei_user, "schedule_reminder", title="Call Ana", date="tomorrow", start="9")
    mallory = user_in("Asia/Taipei", "mallory")
    call(mallory, "create_task", title="Mallory's secret", date="friday", confirm=True)
    client.force_login(taipei_user)
    page = client.get("/tasks/").content.decode()
    data = page_data(page)
    assert [row["title"] for row in data["upcoming"]] == ["Call Ana"]
    assert "Mallory" not in page and "Asia/Taipei" in page


def test_the_page_speaks_the_users_language(client, taipei_user, clock):
    call(taipei_user, "schedule_reminder", title="開會", date="明天", start="下午三點")
    client.force_login(taipei_user)
    client.cookies["django_language"] = "zh-hant"
    page = client.get("/tasks/").content.decode()
    assert '<html lang="zh-hant">' in page
    [row] = page_data(page)["upcoming"]
    assert row["day"].startswith("2025年6月12日")  # the day, written the Chinese way
    assert row["reminder"]["remind_at"] == "2025-06-12T15:00"
