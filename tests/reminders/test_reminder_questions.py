"""Reminder and planner tools that need the user's word ask the user with buttons (a reading
of their time, which reminder, the task they meant), never tell the model to ask and call again."""

from __future__ import annotations

import re
from datetime import time

import pytest

from agents.registry import get_tool
from agents.tool_questions import arguments_answered, question_of
from reminders.models import Reminder, Task
from tests.reminders.conftest import call
from tests.reminders.test_demo_team import seed, turn_answering

pytestmark = pytest.mark.django_db

# Words meant for the model, which people must never read.
FOR_THE_MODEL = re.compile(r"task_id|reminder_id|call again|create_task|YYYY|HH:MM")


def answered(user, key: str, arguments: dict, result: dict, pick: str) -> dict:
    """Run the call once more as the engine does after the user pressed the button `pick`."""
    asked = question_of(result)
    again = arguments_answered(asked, arguments, pick)
    assert again is not None, (asked, pick)
    return call(user, key, **again)


def test_a_bare_hour_is_asked_as_two_buttons_and_the_pick_is_saved(taipei_user, clock):
    arguments = {"title": "開會", "date": "tomorrow", "start": "3点"}
    result = call(taipei_user, "create_task", **arguments)
    assert result["status"] == "need_confirmation" and not Task.objects.exists()
    asked = question_of(result)
    assert asked.options == ["03:00", "15:00"] and asked.answer_into == "start"
    assert not FOR_THE_MODEL.search(result["message"] + asked.question)
    saved = answered(taipei_user, "create_task", arguments, result, "15:00")
    assert saved["status"] == "success" and Task.objects.get().start_time == time(15)


def test_a_date_with_two_readings_is_asked_as_two_days(taipei_user, clock):
    arguments = {"title": "Dentist", "date": "next friday"}
    result = call(taipei_user, "create_task", **arguments)
    asked = question_of(result)
    assert asked.answer_into == "date" and len(asked.options) == 2
    assert all("June" in option for option in asked.options)  # days as people read them
    assert not FOR_THE_MODEL.search(result["message"] + asked.question)
    saved = answered(taipei_user, "create_task", arguments, result, asked.options[1])
    assert saved["status"] == "success"
    assert Task.objects.get().due_date.isoformat() == asked.values[1]


def test_a_bare_reminder_hour_fills_remind_time(taipei_user, clock):
    task_id = call(taipei_user, "create_task", title="Call Ana", date="tomorrow", confirm=True)
    arguments = {"task_id": task_id["data"]["task"]["id"], "remind_time": "4点"}
    result = call(taipei_user, "schedule_reminder", **arguments)
    assert question_of(result).answer_into == "remind_time" and not Reminder.objects.exists()
    answered(taipei_user, "schedule_reminder", arguments, result, "16:00")
    assert Reminder.objects.get().remind_at.astimezone(clock.at.tzinfo).hour == 16


def test_a_task_at_another_time_is_offered_as_a_button(taipei_user, clock):
    call(taipei_user, "create_task", title="Call Ana", date="saturday", start="10:00")
    arguments = {"title": "Call Ana", "date": "tomorrow", "start": "09:00"}
    result = call(taipei_user, "schedule_reminder", **arguments)
    assert result["status"] == "need_confirmation" and not Reminder.objects.exists()
    asked = question_of(result)
    assert asked.answer_into == "task_id" and "Call Ana" in asked.options[0]
    assert not FOR_THE_MODEL.search(result["message"] + asked.question)
    answered(taipei_user, "schedule_reminder", arguments, result, asked.options[0])
    assert Reminder.objects.get().task.title == "Call Ana"


def test_cancelling_one_of_two_reminders_of_a_title_asks_which(taipei_user, clock):
    for day in ("thursday", "saturday"):
        made = call(taipei_user, "create_task", title="Gym", date=day, confirm=True)
        call(taipei_user, "schedule_reminder", task_id=made["data"]["task"]["id"])
    result = call(taipei_user, "cancel_reminder", title="gym")
    asked = question_of(result)
    assert result["status"] == "need_confirmation" and asked.answer_into == "reminder_id"
    assert len(asked.options) == 2 and all("Gym" in option for option in asked.options)
    assert not FOR_THE_MODEL.search(result["message"] + asked.question)
    answered(taipei_user, "cancel_reminder", {"title": "gym"}, result, asked.options[1])
    cancelled = Reminder.objects.get(pk=asked.values[1])
    assert cancelled.status == "cancelled"
    assert Reminder.objects.exclude(pk=cancelled.pk).get().status == "pending"


def test_cancelling_by_a_similar_title_offers_its_reminders(taipei_user, clock):
    made = call(taipei_user, "create_task", title="Call mom", date="saturday", confirm=True)
    call(taipei_user, "schedule_reminder", task_id=made["data"]["task"]["id"])
    result = call(taipei_user, "cancel_reminder", title="call mum")
    asked = question_of(result)
    assert asked is not None and asked.answer_into == "reminder_id"
    assert not FOR_THE_MODEL.search(result["message"] + asked.question)


def test_the_reminder_tools_have_human_titles():
    keys = ("schedule_reminder", "list_reminders", "cancel_reminder")
    assert {key: get_tool(key).label for key in keys} == {
        "schedule_reminder": "Set a reminder",
        "list_reminders": "Look up reminders",
        "cancel_reminder": "Cancel a reminder",
    }


@pytest.mark.django_db(transaction=True)
def test_the_offline_team_asks_the_hour_of_a_bare_time_and_saves_the_pick(
    taipei_user, clock, settings
):
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    seed()
    root = turn_answering(taipei_user, "添加任务：后天3点开会", "15:00")
    assert root.status == "succeeded"
    assert Task.objects.get().start_time == time(15)  # asked, not guessed
    assert "task_id" not in root.answer and "HH:MM" not in root.answer
