"""/api/v1/schedules/ and the tasks page's schedules: the user's own only (another user's id
is 404), validation errors with messages, pause and resume, edits in words, the schema."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group
from django_celery_beat.models import PeriodicTask
from rest_framework.test import APIClient

from reminders.models import ScheduledPrompt
from tests.factories import make_agent
from tests.reminders.conftest import user_in

pytestmark = pytest.mark.django_db
URL = "/api/v1/schedules/"


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def finance(db):
    return make_agent(
        "finance",
        display_name="Finance expert",
        display_names={"en": "Finance expert", "zh-hant": "財務專家", "zh-hans": "财务专家"},
    )


def created(user, **body) -> dict:
    answer = client_of(user).post(
        URL, {"text": "週報告", "agent": "finance", "schedule": "每週一早上", **body}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    return answer.json()


def test_create_list_and_retrieve_in_the_users_zone(clock, finance, taipei_user):
    made = created(taipei_user)
    assert made["text"] == "週報告" and made["agent"] == "finance" and not made["paused"]
    assert made["schedule"] == "every Monday at 09:00"
    assert made["next_run_at"] == "2025-06-16T09:00:00+08:00"
    assert made["next_run"] == "Mon 16 Jun at 09:00"
    client = client_of(taipei_user)
    assert [s["id"] for s in client.get(URL).json()] == [made["id"]]
    assert client.get(f"{URL}{made['id']}/").json() == made


def test_another_users_schedules_are_invisible_and_404(clock, finance, taipei_user):
    made = created(taipei_user)
    other = client_of(user_in("Asia/Taipei", "mallory"))
    assert other.get(URL).json() == []
    for method in ("get", "patch", "put", "delete"):
        answer = getattr(other, method)(f"{URL}{made['id']}/", {"paused": True}, format="json")
        assert answer.status_code == 404, method
        assert answer.json()["error"]["code"] == "not_found"
    assert ScheduledPrompt.objects.get().enabled


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"schedule": "someday"}, "schedule", "Say which days"),
        ({"schedule": "每週"}, "schedule", "Say which days"),
        ({"agent": "nobody"}, "agent", "No agent is called"),
        ({"text": "   "}, "text", ""),
        ({"text": None}, "text", ""),
    ],
)
def test_validation_errors_say_what_is_wrong_and_save_nothing(
    clock, finance, taipei_user, body, field, words
):
    payload = {"text": "週報告", "agent": "finance", "schedule": "每週一早上", **body}
    answer = client_of(taipei_user).post(URL, payload, format="json")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid" and field in error["details"]
    assert words in error["message"] or words in json.dumps(error["details"])
    assert not ScheduledPrompt.objects.exists() and not PeriodicTask.objects.exists()


def test_an_agent_the_user_may_not_use_is_403(clock, taipei_user):
    make_agent("payroll", access_group=Group.objects.create(name="hr"))
    answer = client_of(taipei_user).post(
        URL, {"text": "x", "agent": "payroll", "schedule": "每月1號"}, format="json"
    )
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "agent_forbidden"
    assert not ScheduledPrompt.objects.exists()


def test_pause_resume_and_edit_in_words(clock, finance, taipei_user):
    made = created(taipei_user)
    client = client_of(taipei_user)
    url = f"{URL}{made['id']}/"
    paused = client.patch(url, {"paused": True}, format="json").json()
    assert paused["paused"] and paused["next_run_at"] is None
    scheduled = ScheduledPrompt.objects.get()
    assert not PeriodicTask.objects.get(pk=scheduled.periodic_task_id).enabled
    resumed = client.patch(url, {"paused": False}, format="json").json()
    assert not resumed["paused"] and resumed["next_run_at"] == "2025-06-16T09:00:00+08:00"
    make_agent("hr", display_name="HR expert")
    edited = client.patch(
        url, {"schedule": "每月1號 10:30", "text": "月報告", "agent": "hr"}, format="json"
    ).json()
    assert edited["schedule"] == "on day 1 of every month at 10:30"
    assert edited["next_run_at"] == "2025-07-01T10:30:00+08:00"
    assert (edited["text"], edited["agent"]) == ("月報告", "hr")
    bad = client.patch(url, {"schedule": "whenever"}, format="json")
    assert bad.status_code == 400
    assert client.get(url).json()["schedule"] == "on day 1 of every month at 10:30"


def test_the_schema_documents_the_endpoints(client, user):
    client.force_login(user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/schedules/{schedule_id}/" in schema and "next_run_at" in schema


def test_the_tasks_page_lists_the_users_schedules_only(client, clock, finance, taipei_user):
    created(taipei_user)
    mallory = user_in("Asia/Taipei", "mallory")
    created(mallory, text="Mallory's secret")
    client.force_login(taipei_user)
    page = client.get("/tasks/").content.decode()
    data = json.loads(page.split('id="schedules-data" type="application/json">')[1].split("<")[0])
    [row] = data["schedules"]
    assert (row["text"], row["agent_name"], row["schedule"]) == (
        "週報告",
        "Finance expert",
        "every Monday at 09:00",
    )
    assert row["next_run"] == "Mon 16 Jun at 09:00" and row["paused"] is False
    assert "finance" in [a["name"] for a in data["agents"]]
    assert "Mallory" not in page
