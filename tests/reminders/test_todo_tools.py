"""Task tools through the registry: create (time checks, overlaps, near-duplicates), query,
modify, finish, remove (by id or title; near misses in test_lookup), each scoped to the user."""

from __future__ import annotations

from datetime import datetime, time

import pytest

from reminders.models import Reminder, ReminderStatus, Task, TaskStatus
from tests.reminders.conftest import TAIPEI, call, user_in

pytestmark = pytest.mark.django_db


def create(user, title="Dentist", **args):
    return call(user, "create_task", title=title, **args)


def test_create_task_with_times_returns_the_task(taipei_user, clock):
    result = create(taipei_user, date="saturday", start="10:00", end="11:00", priority="high")
    assert result["status"] == "success"
    assert result["message"] == "Created “Dentist” on Saturday 14 June 2025, 10:00–11:00."
    data = result["data"]["task"]
    assert data["date"] == "2025-06-14" and data["start"] == "10:00" and data["end"] == "11:00"
    assert data["priority"] == "high" and data["status"] == "pending"
    task = Task.objects.get()
    assert task.user == taipei_user and task.start_time == time(10)


def test_create_task_defaults_to_today_any_time(taipei_user, clock):
    data = create(taipei_user, title="Buy milk")["data"]["task"]
    assert data["date"] == "2025-06-11" and data["when"] == "any time"


def test_a_segment_is_kept_only_without_exact_times(taipei_user, clock):
    assert (
        create(taipei_user, segment="morning", date="sat")["data"]["task"]["segment"] == "morning"
    )
    both = create(taipei_user, title="Walk", segment="evening", start="19:00", date="sun")
    assert both["data"]["task"]["segment"] is None and both["data"]["task"]["start"] == "19:00"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"date": "someday"}, "Cannot read the date"),
        ({"start": "25:00"}, "not a valid time"),
        ({"start": "11:00", "end": "10:00"}, "end time must be after"),
        ({"start": "11:00", "end": "11:00"}, "end time must be after"),
        ({"end": "11:00"}, "end time needs a start"),
        ({"title": "   "}, "needs a title"),
    ],
)
def test_create_task_invalid_input_is_an_error_and_creates_nothing(taipei_user, clock, args, words):
    result = create(taipei_user, **{"date": "saturday", **args})
    assert result["status"] == "error" and words in result["message"]
    assert not Task.objects.exists()


def test_schema_violations_are_registry_errors(taipei_user, clock):
    assert call(taipei_user, "create_task")["registry_error"] == "invalid_arguments"
    assert create(taipei_user, segment="noon")["registry_error"] == "invalid_arguments"
    assert create(taipei_user, colour="red")["registry_error"] == "invalid_arguments"


def test_a_time_already_past_today_asks_for_confirmation_then_creates(taipei_user, clock):
    first = create(taipei_user, start="09:00")  # it is 10:00
    assert (
        first["status"] == "need_confirmation"
        and "09:00 today has already passed" in first["message"]
    )
    assert not Task.objects.exists()
    assert create(taipei_user, start="09:00", confirm=True)["status"] == "success"
    assert create(taipei_user, title="Later", start="10:01")["status"] == "success"


def test_a_past_day_or_an_elapsed_segment_asks_for_confirmation(taipei_user, clock):
    assert create(taipei_user, date="yesterday")["status"] == "need_confirmation"
    clock.at = datetime(2025, 6, 11, 12, 30, tzinfo=TAIPEI)
    assert create(taipei_user, segment="morning")["status"] == "need_confirmation"
    assert create(taipei_user, segment="afternoon")["status"] == "success"


def test_overlaps_are_reported_instead_of_created(taipei_user, clock):
    create(taipei_user, title="Standup", date="friday", start="10:00", end="11:00")
    clash = create(taipei_user, title="Call Bob", date="friday", start="10:30", end="11:30")
    assert clash["status"] == "conflict" and "overlaps “Standup” (10:00–11:00)" in clash["message"]
    assert [t["title"] for t in clash["data"]["overlaps"]] == ["Standup"]
    assert Task.objects.count() == 1
    forced = create(
        taipei_user, title="Call Bob", date="friday", start="10:30", end="11:30", confirm=True
    )
    assert forced["status"] == "success"


def test_touching_ends_do_not_overlap(taipei_user, clock):
    create(taipei_user, title="Standup", date="friday", start="10:00", end="11:00")
    assert (
        create(taipei_user, title="Review", date="friday", start="11:00", end="12:00")["status"]
        == "success"
    )
    assert (
        create(taipei_user, title="Prep", date="friday", start="09:00", end="10:00")["status"]
        == "success"
    )


def test_a_start_without_end_lasts_the_default_length(taipei_user, clock, settings):
    settings.REMINDER_TASK_MINUTES = 60
    create(taipei_user, title="Gym", date="friday", start="10:00")
    assert create(taipei_user, title="Lunch", date="friday", start="10:59")["status"] == "conflict"
    assert create(taipei_user, title="Lunch", date="friday", start="11:00")["status"] == "success"


def test_segments_and_other_days_never_clash(taipei_user, clock):
    create(taipei_user, title="Standup", date="friday", start="10:00", end="11:00")
    assert create(taipei_user, title="Errands", date="friday", segment="morning")["status"] == (
        "success"
    )
    assert create(taipei_user, title="Call", date="saturday", start="10:00")["status"] == "success"


def test_near_duplicate_titles_the_same_day_are_a_conflict(taipei_user, clock):
    create(taipei_user, title="Pick up Anna at the airport", date="saturday")
    again = create(taipei_user, title="pick up anna at airport", date="saturday")
    assert again["status"] == "conflict" and "looks like" in again["message"]
    assert again["data"]["duplicates"][0]["title"] == "Pick up Anna at the airport"
    assert create(taipei_user, title="Pick up Anna at airport", date="sunday")["status"] == (
        "success"
    )
    assert create(taipei_user, title="Buy flowers", date="saturday")["status"] == "success"


def test_another_users_tasks_neither_clash_nor_show(taipei_user, clock):
    other = user_in("Asia/Taipei", "otto")
    create(other, title="Standup", date="friday", start="10:00", end="11:00")
    assert (
        create(taipei_user, title="Standup", date="friday", start="10:00", end="11:00")["status"]
        == "success"
    )
    listed = call(taipei_user, "query_tasks")["data"]["tasks"]
    assert [t["title"] for t in listed] == ["Standup"] and len(listed) == 1
    assert call(taipei_user, "finish_task", title="Standup")["status"] == "success"
    assert Task.objects.get(user=other).status == TaskStatus.PENDING


def test_query_tasks_filters_by_day_range_status_and_text(taipei_user, clock):
    create(taipei_user, title="A thursday thing", date="thursday")
    create(taipei_user, title="Friday thing", date="friday", start="09:00")
    create(taipei_user, title="Another friday thing", date="friday", segment="morning")
    done = create(taipei_user, title="Done thing", date="friday", start="15:00")
    call(taipei_user, "finish_task", task_id=done["data"]["task"]["id"])
    friday = call(taipei_user, "query_tasks", date="friday")["data"]
    assert friday["total"] == 2
    everything = call(taipei_user, "query_tasks", status="all", **{"from": "today", "to": "fri"})
    assert everything["data"]["total"] == 4
    assert call(taipei_user, "query_tasks", status="done")["data"]["tasks"][0]["title"] == (
        "Done thing"
    )
    assert call(taipei_user, "query_tasks", text="another")["data"]["total"] == 1
    empty = call(taipei_user, "query_tasks", date="sunday")
    assert empty["status"] == "success"
    assert empty["message"] == "No tasks match on Sunday 15 June 2025."
    assert call(taipei_user, "query_tasks", date="next saturday")["message"] == (
        "No tasks match on Saturday 21 June 2025."  # the reading taken is said back
    )
    backwards = call(taipei_user, "query_tasks", **{"from": "friday", "to": "thursday"})
    assert backwards["status"] == "error"


def test_finish_remove_modify_find_one_task_by_id_or_its_title(taipei_user, clock):
    create(taipei_user, title="Pick up Anna at the airport", date="saturday", segment="morning")
    milk = create(taipei_user, title="Buy milk", date="friday")["data"]["task"]["id"]
    assert call(taipei_user, "finish_task", title="pick up anna at the airport!")["status"] == (
        "success"
    )
    assert call(taipei_user, "remove_task", title="buy mlik")["status"] == "need_confirmation"
    assert call(taipei_user, "remove_task", task_id=milk)["status"] == "success"
    assert list(Task.objects.values_list("status", flat=True)) == ["done"]


def test_several_matches_return_candidates_and_none_says_so(taipei_user, clock):
    create(taipei_user, title="Call mom", date="friday")
    create(taipei_user, title="Call dad", date="saturday")
    several = call(taipei_user, "finish_task", title="call")
    assert several["status"] == "need_confirmation"
    assert sorted(c["title"] for c in several["data"]["candidates"]) == ["Call dad", "Call mom"]
    none = call(taipei_user, "remove_task", title="walk the dog")
    assert none["status"] == "error" and "No pending task matches “walk the dog”" in none["message"]
    assert call(taipei_user, "finish_task", task_id=999)["status"] == "error"
    assert call(taipei_user, "finish_task")["status"] == "error"
    exact = call(taipei_user, "finish_task", title="call MOM")  # an exact title wins
    assert exact["status"] == "success" and exact["data"]["task"]["title"] == "Call mom"


def test_finished_tasks_are_not_found_again(taipei_user, clock):
    task_id = create(taipei_user, title="Buy milk")["data"]["task"]["id"]
    call(taipei_user, "finish_task", task_id=task_id)
    assert call(taipei_user, "finish_task", task_id=task_id)["status"] == "error"


def test_modify_task_changes_fields_and_rechecks_what_changed(taipei_user, clock):
    create(taipei_user, title="Standup", date="friday", start="10:00", end="11:00")
    task_id = create(taipei_user, title="Review", date="friday", start="14:00", end="15:30")[
        "data"
    ]["task"]["id"]
    moved = call(taipei_user, "modify_task", task_id=task_id, start="16:00")
    assert moved["status"] == "success"
    assert (moved["data"]["task"]["start"], moved["data"]["task"]["end"]) == ("16:00", "17:30")
    clash = call(taipei_user, "modify_task", task_id=task_id, start="10:30")
    assert clash["status"] == "conflict"
    renamed = call(taipei_user, "modify_task", task_id=task_id, new_title="Code review", notes="PR")
    assert renamed["data"]["task"]["title"] == "Code review" and renamed["data"]["task"]["notes"]
    vague = call(taipei_user, "modify_task", title="code review", segment="evening")
    assert vague["data"]["task"]["when"] == "evening (18:00–22:00)"
    anytime = call(taipei_user, "modify_task", task_id=task_id, any_time=True, date="saturday")
    assert anytime["data"]["task"]["when"] == "any time"
    assert anytime["data"]["task"]["date"] == "2025-06-14"
    nothing = call(taipei_user, "modify_task", task_id=task_id)
    assert nothing["status"] == "error" and "Nothing to change" in nothing["message"]
    assert call(taipei_user, "modify_task", task_id=task_id, start="99:00")["status"] == "error"


def test_modify_to_a_past_time_asks_for_confirmation(taipei_user, clock):
    task_id = create(taipei_user, title="Call", start="15:00")["data"]["task"]["id"]
    result = call(taipei_user, "modify_task", task_id=task_id, start="08:00")
    assert result["status"] == "need_confirmation"
    assert Task.objects.get().start_time == time(15)
    assert (
        call(taipei_user, "modify_task", task_id=task_id, start="08:00", confirm=True)["status"]
        == "success"
    )


def test_a_reminder_follows_its_task_and_goes_with_it(taipei_user, clock, fixed_weather):
    task_id = create(taipei_user, title="Airport", date="saturday", segment="morning")["data"][
        "task"
    ]["id"]
    fixed_weather["taipei"] = "rain"
    call(taipei_user, "schedule_reminder", task_id=task_id, city="Taipei")
    moved = call(taipei_user, "modify_task", task_id=task_id, date="sunday")
    assert "reminder moved to Saturday 14 June 20:00" in moved["message"]
    reminder = Reminder.objects.get()
    assert reminder.remind_at == reminder.due_at == datetime(2025, 6, 14, 20, tzinfo=TAIPEI)
    assert reminder.content.startswith("Reminder: Airport — Sunday 15 June")
    assert "umbrella" in reminder.content  # the weather line is kept
    today = call(taipei_user, "modify_task", task_id=task_id, date="today", start="11:00")
    assert "reminder was cancelled" in today["message"]
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED
    call(taipei_user, "schedule_reminder", task_id=task_id)  # 11:00 today: refused (09:00 past)
    call(taipei_user, "modify_task", task_id=task_id, date="friday", start="09:00")
    call(taipei_user, "schedule_reminder", task_id=task_id)
    removed = call(taipei_user, "remove_task", task_id=task_id)
    assert "Cancelled 1 pending reminder" in removed["message"]
    assert not Task.objects.exists()
    assert sorted(Reminder.objects.values_list("status", flat=True)) == ["cancelled", "cancelled"]


def test_finishing_a_task_cancels_its_pending_reminder(taipei_user, clock):
    task_id = create(taipei_user, title="Airport", date="saturday")["data"]["task"]["id"]
    call(taipei_user, "schedule_reminder", task_id=task_id)
    finished = call(taipei_user, "finish_task", task_id=task_id)
    assert "Cancelled 1 pending reminder" in finished["message"]
    assert Reminder.objects.get().status == ReminderStatus.CANCELLED
