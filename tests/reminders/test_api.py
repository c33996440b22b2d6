"""The planner API (/api/v1/planner/): the user's own tasks and reminders, grouped, with their
chats; edits with the planner's checks; another user's ids are 404."""

from __future__ import annotations

from datetime import datetime

import pytest
from rest_framework.test import APIClient

from chat.models import ChatSession
from reminders.models import Reminder, ReminderStatus, Task, TaskStatus
from tests.reminders.conftest import TAIPEI, call, user_in
from tests.reminders.test_demo_team import seed, turn

pytestmark = pytest.mark.django_db
URL = "/api/v1/planner/"


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def planned(user, title="Call Ana", **args):
    """A task with its reminder, made by the tool as the chat would (at the time asked)."""
    result = call(user, "schedule_reminder", title=title, **args)
    assert result["status"] == "success", result
    return Task.objects.get(pk=result["data"]["task"]["id"]), result


def test_the_list_groups_upcoming_overdue_and_done_in_the_users_timezone(taipei_user, clock):
    ana, _ = planned(taipei_user, date="tomorrow", start="9")
    call(taipei_user, "create_task", title="Old", date="2025-06-01", confirm=True)
    done, _ = planned(taipei_user, title="Dentist", date="friday", start="10:00")
    call(taipei_user, "finish_task", task_id=done.pk)
    body = client_of(taipei_user).get(URL).json()
    assert body["timezone"] == "Asia/Taipei" and body["today"] == "2025-06-11"
    [row] = body["upcoming"]
    assert (row["kind"], row["id"], row["title"], row["start"]) == (
        "task",
        ana.pk,
        "Call Ana",
        "09:00",
    )
    assert row["reminder"]["remind_at"] == "2025-06-12T09:00"
    assert row["reminder"]["text"] == "tomorrow (Thu 12 Jun) at 09:00"
    assert [r["title"] for r in body["overdue"]] == ["Old"]
    [finished] = body["done"]
    assert finished["title"] == "Dentist" and finished["reminder"]["status"] == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_task_made_in_a_chat_links_to_that_chat(taipei_user, clock, settings):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    run = turn(taipei_user, "Remind me to call Ana tomorrow at 9")
    [row] = client_of(taipei_user).get(URL).json()["upcoming"]
    assert row["title"] == "call Ana"
    assert row["chat"] == {"session_id": str(run.session_id), "url": f"/#{run.session_id}"}
    assert ChatSession.objects.get(pk=run.session_id).user == taipei_user


def test_editing_the_title_time_and_reminder_time(taipei_user, clock):
    task, _ = planned(taipei_user, date="tomorrow", start="9")
    answer = client_of(taipei_user).patch(
        f"{URL}tasks/{task.pk}/",
        {"title": "Call Ana back", "start": "10:30", "remind_at": "2025-06-12T08:45"},
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    task.refresh_from_db()
    assert (task.title, f"{task.start_time:%H:%M}") == ("Call Ana back", "10:30")
    reminder = Reminder.objects.get(task=task, status=ReminderStatus.PENDING)
    assert reminder.remind_at == reminder.due_at == datetime(2025, 6, 12, 8, 45, tzinfo=TAIPEI)
    assert (
        "Reminder set for tomorrow (Thu 12 Jun) at 08:45 (Asia/Taipei)." in answer.json()["message"]
    )
    assert answer.json()["item"]["reminder"]["remind_at"] == "2025-06-12T08:45"


def test_a_reminder_time_already_past_changes_nothing(taipei_user, clock):
    task, _ = planned(taipei_user, date="tomorrow", start="9")
    answer = client_of(taipei_user).patch(
        f"{URL}tasks/{task.pk}/",
        {"title": "Renamed", "remind_at": "2025-06-11T09:00"},
        format="json",
    )
    assert answer.status_code == 400 and "already passed" in answer.json()["error"]["message"]
    task.refresh_from_db()
    assert task.title == "Call Ana"  # the title edit went back with the refused reminder
    assert Reminder.objects.get(task=task).remind_at == datetime(2025, 6, 12, 9, tzinfo=TAIPEI)


def test_a_clash_is_409_until_confirmed(taipei_user, clock):
    planned(taipei_user, title="Meeting", date="tomorrow", start="10:00")
    task, _ = planned(taipei_user, date="tomorrow", start="9")
    client = client_of(taipei_user)
    clash = client.patch(f"{URL}tasks/{task.pk}/", {"start": "10:00"}, format="json")
    assert clash.status_code == 409 and clash.json()["error"]["details"]["confirmable"]
    task.refresh_from_db()
    assert f"{task.start_time:%H:%M}" == "09:00"
    again = client.patch(
        f"{URL}tasks/{task.pk}/", {"start": "10:00", "confirm": True}, format="json"
    )
    assert again.status_code == 200


def test_setting_and_clearing_the_reminder_of_a_task_without_one(taipei_user, clock):
    call(taipei_user, "create_task", title="Buy milk", date="friday", confirm=True)
    task = Task.objects.get()
    client = client_of(taipei_user)
    client.patch(f"{URL}tasks/{task.pk}/", {"remind_at": "2025-06-13T07:30"}, format="json")
    assert Reminder.objects.get(task=task).remind_at == datetime(2025, 6, 13, 7, 30, tzinfo=TAIPEI)
    client.patch(f"{URL}tasks/{task.pk}/", {"remind_at": None}, format="json")
    assert Reminder.objects.get(task=task).status == ReminderStatus.CANCELLED


def test_complete_and_delete(taipei_user, clock):
    task, _ = planned(taipei_user, date="tomorrow", start="9")
    client = client_of(taipei_user)
    done = client.post(f"{URL}tasks/{task.pk}/complete/")
    assert done.status_code == 200 and done.json()["item"]["group"] == "done"
    task.refresh_from_db()
    assert task.status == TaskStatus.DONE
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED
    assert client.delete(f"{URL}tasks/{task.pk}/").status_code == 204
    assert not Task.objects.exists()


def test_moving_and_cancelling_a_reminder(taipei_user, clock):
    task, result = planned(taipei_user, date="tomorrow", start="9")
    reminder_id = result["data"]["reminder"]["id"]
    client = client_of(taipei_user)
    moved = client.patch(
        f"{URL}reminders/{reminder_id}/", {"remind_at": "2025-06-12T07:00"}, format="json"
    )
    assert moved.status_code == 200
    assert Reminder.objects.get().remind_at == datetime(2025, 6, 12, 7, tzinfo=TAIPEI)
    bad = client.patch(f"{URL}reminders/{reminder_id}/", {"remind_at": "tomorrow"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid"
    assert client.post(f"{URL}reminders/{reminder_id}/cancel/").status_code == 200
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED
    again = client.patch(
        f"{URL}reminders/{reminder_id}/", {"remind_at": "2025-06-12T07:00"}, format="json"
    )
    assert again.status_code == 400 and "cancelled" in again.json()["error"]["message"]


def test_another_users_ids_are_404_and_change_nothing(taipei_user, clock):
    task, result = planned(taipei_user, date="tomorrow", start="9")
    reminder_id = result["data"]["reminder"]["id"]
    mallory = client_of(user_in("Asia/Taipei", "mallory"))
    assert mallory.get(URL).json()["upcoming"] == []
    for method, path, body in [
        ("patch", f"tasks/{task.pk}/", {"title": "mine"}),
        ("delete", f"tasks/{task.pk}/", None),
        ("post", f"tasks/{task.pk}/complete/", None),
        ("patch", f"reminders/{reminder_id}/", {"remind_at": "2025-06-12T07:00"}),
        ("post", f"reminders/{reminder_id}/cancel/", None),
    ]:
        answer = getattr(mallory, method)(URL + path, body, format="json")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found", path
    task.refresh_from_db()
    assert task.title == "Call Ana" and task.status == TaskStatus.PENDING
    assert Reminder.objects.get().status == ReminderStatus.PENDING


def test_signed_out_is_refused(db):
    assert APIClient().get(URL).status_code in (401, 403)
