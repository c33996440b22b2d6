"""Calendar tools: a day's timeline in order, and free slots (default hours, full days, errors)."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.reminders.conftest import TAIPEI, call, user_in

pytestmark = pytest.mark.django_db


def add(user, title, **args):
    result = call(user, "create_task", title=title, confirm=True, **args)
    assert result["status"] == "success", result
    return result


def slots(user, **args):
    return call(user, "find_free_slots", **args)


def test_day_schedule_is_in_time_order_with_any_time_tasks_last(taipei_user, clock):
    add(taipei_user, "Anytime errand", date="friday")
    add(taipei_user, "Dinner", date="friday", segment="evening")
    add(taipei_user, "Lunch", date="friday", start="12:00", end="13:00")
    add(taipei_user, "Early run", date="friday", start="07:00")
    add(taipei_user, "Shopping", date="friday", segment="morning")
    add(taipei_user, "Other day", date="saturday", start="08:00")
    result = call(taipei_user, "get_day_schedule", date="friday")
    titles = [item["title"] for item in result["data"]["items"]]
    assert titles == ["Early run", "Shopping", "Lunch", "Dinner", "Anytime errand"]
    assert result["message"].startswith("Friday 13 June 2025: 07:00 Early run; morning")
    assert result["data"]["timezone"] == "Asia/Taipei"


def test_day_schedule_lists_that_days_reminders(taipei_user, clock):
    task_id = add(taipei_user, "Airport", date="saturday")["data"]["task"]["id"]
    call(taipei_user, "schedule_reminder", task_id=task_id)
    friday = call(taipei_user, "get_day_schedule", date="friday")["data"]
    assert [r["task_id"] for r in friday["reminders"]] == [task_id]  # 20:00 Friday
    assert call(taipei_user, "get_day_schedule", date="saturday")["data"]["reminders"] == []


def test_empty_day_and_invalid_date(taipei_user, clock):
    empty = call(taipei_user, "get_day_schedule", date="sunday")
    assert (
        empty["status"] == "success"
        and empty["message"] == "Nothing planned on Sunday 15 June 2025."
    )
    assert call(taipei_user, "get_day_schedule", date="2025-13-01")["status"] == "error"


def test_free_slots_default_to_nine_to_six_between_timed_tasks(taipei_user, clock):
    add(taipei_user, "Standup", date="friday", start="10:00", end="11:00")
    add(taipei_user, "Lunch", date="friday", start="12:00", end="13:30")
    add(taipei_user, "Errands", date="friday", segment="afternoon")  # does not block time
    result = slots(taipei_user, date="friday")
    assert result["status"] == "success"
    assert [(s["start"], s["end"]) for s in result["data"]["slots"]] == [
        ("09:00", "10:00"),
        ("11:00", "12:00"),
        ("13:30", "18:00"),
    ]
    assert result["data"]["slots"][2]["minutes"] == 270
    assert result["message"].startswith("Free between 09:00 and 18:00 on Friday 13 June 2025")


def test_free_slots_window_and_minimum_are_configurable(taipei_user, clock, settings):
    add(taipei_user, "Standup", date="friday", start="10:00", end="10:45")
    narrow = slots(taipei_user, date="friday", day_start="10:00", day_end="11:00", min_minutes=20)
    assert [(s["start"], s["end"]) for s in narrow["data"]["slots"]] == []
    wide = slots(taipei_user, date="friday", day_start="10:00", day_end="11:00", min_minutes=15)
    assert [(s["start"], s["end"]) for s in wide["data"]["slots"]] == [("10:45", "11:00")]
    settings.REMINDER_DAY_START, settings.REMINDER_DAY_END = "08:00", "10:00"
    default = slots(taipei_user, date="friday")
    assert [(s["start"], s["end"]) for s in default["data"]["slots"]] == [("08:00", "10:00")]


def test_a_full_day_says_so(taipei_user, clock):
    add(taipei_user, "Workshop", date="friday", start="08:30", end="12:00")
    add(taipei_user, "Offsite", date="friday", start="12:00", end="18:30")
    result = slots(taipei_user, date="friday")
    assert result["status"] == "success" and result["data"]["slots"] == []
    assert "the day is full" in result["message"]


def test_overlapping_tasks_are_merged(taipei_user, clock):
    add(taipei_user, "A", date="friday", start="09:00", end="12:00")
    add(taipei_user, "B", date="friday", start="10:00", end="11:00")
    result = slots(taipei_user, date="friday")
    assert [(s["start"], s["end"]) for s in result["data"]["slots"]] == [("12:00", "18:00")]


def test_today_starts_from_now(taipei_user, clock):
    clock.at = datetime(2025, 6, 11, 14, 20, 30, tzinfo=TAIPEI)
    add(taipei_user, "Call", start="15:00", end="16:00")
    today = slots(taipei_user)
    assert [(s["start"], s["end"]) for s in today["data"]["slots"]] == [
        ("14:21", "15:00"),
        ("16:00", "18:00"),
    ]
    clock.at = datetime(2025, 6, 11, 19, 0, tzinfo=TAIPEI)
    over = slots(taipei_user)
    assert over["data"]["slots"] == [] and "are over" in over["message"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"date": "not a date"}, "Cannot read the date"),
        ({"date": "yesterday"}, "is in the past"),
        ({"day_start": "18:00", "day_end": "09:00"}, "day_end must be after day_start"),
        ({"day_start": "nine"}, "Cannot read the time"),
    ],
)
def test_free_slot_errors(taipei_user, clock, args, words):
    result = slots(taipei_user, **args)
    assert result["status"] == "error" and words in result["message"]


def test_each_user_sees_their_own_day_in_their_own_timezone(db, clock):
    tokyo = user_in("Asia/Tokyo", "kei")
    los_angeles = user_in("America/Los_Angeles", "lee")
    add(tokyo, "Busy", date="friday", start="09:00", end="18:00")
    assert slots(tokyo, date="friday")["data"]["slots"] == []
    assert len(slots(los_angeles, date="friday")["data"]["slots"]) == 1
    # 10:00 Taipei is 11:00 in Tokyo (still Wednesday) and 19:00 Tuesday in Los Angeles.
    assert call(los_angeles, "get_day_schedule")["data"]["date"] == "2025-06-10"
    assert call(tokyo, "get_day_schedule")["data"]["date"] == "2025-06-11"
