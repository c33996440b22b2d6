"""Tools that find a task or reminder by title act only on the same title (folded: case,
width, spacing, punctuation, Traditional/Simplified) or an id; a near miss changes nothing and
returns the candidates with need_confirmation."""

from __future__ import annotations

from datetime import date

import pytest

from reminders.models import Reminder, ReminderStatus, Task, TaskStatus
from tests.reminders.conftest import call

pytestmark = pytest.mark.django_db

# (the pending task, what the user asked for): close, but another task.
NEAR_MISSES = [
    ("Call mom", "call dad"),
    ("写周报", "写月报"),
    ("買菜", "買菸"),
    ("ny mon 15", "taipei mon 15"),
]
# (the pending task, the same title as said another way)
SAME_TITLES = [
    ("Call mom", "CALL  MOM!"),
    ("Call mom", "ｃａｌｌ　ｍｏｍ"),  # full-width letters and space
    ("写周报", "寫週報。"),  # Traditional script, a full stop
    ("買菜", "买菜"),
    ("ny mon 15", "NY Mon 15."),
]
# Every tool that takes a title, with arguments that would change something.
TOOLS = {
    "finish_task": {},
    "remove_task": {},
    "modify_task": {"new_title": "Renamed", "date": "saturday"},
    "schedule_reminder": {},
}


def task(user, title: str) -> int:
    result = call(user, "create_task", title=title, date="friday", start="16:00", confirm=True)
    return result["data"]["task"]["id"]


def snapshot() -> list[tuple]:
    return list(Task.objects.values_list("id", "title", "status", "due_date", "start_time"))


@pytest.mark.parametrize(("existing", "asked"), NEAR_MISSES)
@pytest.mark.parametrize("key", TOOLS)
def test_a_near_miss_changes_nothing_and_offers_the_candidate(
    taipei_user, clock, key, existing, asked
):
    task_id = task(taipei_user, existing)
    before = snapshot()
    result = call(taipei_user, key, title=asked, **TOOLS[key])
    assert result["status"] == "need_confirmation", result
    assert result["data"]["reason"] == "no_exact_match"
    assert [c["id"] for c in result["data"]["candidates"]] == [task_id]
    assert existing in result["message"] and "Nothing was changed" in result["message"]
    assert snapshot() == before
    assert not Reminder.objects.exists()


@pytest.mark.parametrize(("existing", "asked"), NEAR_MISSES)
def test_cancelling_by_a_near_miss_title_changes_nothing(taipei_user, clock, existing, asked):
    reminder_id = call(taipei_user, "schedule_reminder", task_id=task(taipei_user, existing))[
        "data"
    ]["reminder"]["id"]
    result = call(taipei_user, "cancel_reminder", title=asked)
    assert result["status"] == "need_confirmation", result
    assert [c["id"] for c in result["data"]["candidates"]] == [reminder_id]
    assert result["data"]["candidates"][0]["task"] == existing
    assert Reminder.objects.get().status == ReminderStatus.PENDING


@pytest.mark.parametrize(("existing", "said"), SAME_TITLES)
def test_the_same_title_said_another_way_acts(taipei_user, clock, existing, said):
    task_id = task(taipei_user, existing)
    task(taipei_user, "Something else")
    moved = call(taipei_user, "modify_task", title=said, date="saturday")
    assert moved["status"] == "success", moved
    assert Task.objects.get(pk=task_id).due_date == date(2025, 6, 14)
    scheduled = call(taipei_user, "schedule_reminder", title=said)
    assert scheduled["status"] == "success" and scheduled["data"]["reminder"]["task_id"] == task_id
    assert call(taipei_user, "cancel_reminder", title=said)["status"] == "success"
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED
    assert call(taipei_user, "finish_task", title=said)["status"] == "success"
    assert Task.objects.get(pk=task_id).status == TaskStatus.DONE
    assert Task.objects.filter(status=TaskStatus.PENDING).count() == 1


def test_words_of_a_title_are_only_a_candidate(taipei_user, clock):
    task_id = task(taipei_user, "Pick up Anna at the airport")
    result = call(taipei_user, "finish_task", title="airport")
    assert result["status"] == "need_confirmation"
    assert [c["id"] for c in result["data"]["candidates"]] == [task_id]
    assert Task.objects.get().status == TaskStatus.PENDING
    assert call(taipei_user, "finish_task", task_id=task_id)["status"] == "success"


def test_two_tasks_of_the_same_title_ask_which(taipei_user, clock):
    first = task(taipei_user, "Call mom")
    second = call(taipei_user, "create_task", title="call mom", date="saturday")["data"]["task"]
    result = call(taipei_user, "remove_task", title="Call Mom")
    assert result["status"] == "need_confirmation"
    assert result["data"]["reason"] == "several_matches"
    assert sorted(c["id"] for c in result["data"]["candidates"]) == [first, second["id"]]
    assert Task.objects.count() == 2


def test_candidates_come_closest_first_and_unrelated_titles_are_left_out(taipei_user, clock):
    task(taipei_user, "Call mum")
    task(taipei_user, "Water the plants")
    task(taipei_user, "Call mom")
    result = call(taipei_user, "finish_task", title="call mom now")
    titles = [c["title"] for c in result["data"]["candidates"]]
    assert titles == ["Call mom", "Call mum"]  # the one its words contain first


def test_a_reminder_of_an_exact_title_without_one_pending_is_an_error(taipei_user, clock):
    task(taipei_user, "Call mom")
    reminded = task(taipei_user, "Call mom's doctor")
    call(taipei_user, "schedule_reminder", task_id=reminded)
    result = call(taipei_user, "cancel_reminder", title="call mom")
    assert result["status"] == "error" and "has no pending reminder" in result["message"]
    assert Reminder.objects.get().status == ReminderStatus.PENDING
