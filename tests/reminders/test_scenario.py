"""The planner team end to end through the real openai client and the fake server:
"周末早上去机场接人" / "pick someone up at the airport Saturday morning" creates the task, asks
the weather, and schedules a reminder at Friday 20:00 local that mentions the rain."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.utils import translation
from django.utils.translation import gettext

from chat.models import ChatMessage
from delegation.models import FINAL_STATUSES, Run
from delegation.turns import turn_start
from reminders.models import Reminder, Task
from reminders.weather import condition_name
from tests.factories import make_agent
from tests.fake_openai import Team, delegate, text, tool_call, tool_calls
from tests.reminders.conftest import user_in

pytestmark = pytest.mark.django_db(transaction=True)

SHANGHAI = ZoneInfo("Asia/Shanghai")
PLANNER_TOOLS = {
    "tasks": ["create_task", "query_tasks", "modify_task", "finish_task", "remove_task"],
    "weather": ["get_weather"],
    "reminders": ["schedule_reminder", "list_reminders", "cancel_reminder"],
    "calendar": ["get_day_schedule", "find_free_slots"],
}
SCRIPTS = {
    "zh": {
        "message": "周末早上去机场接人",
        "language": "zh-hans",  # the run's, from the user's words
        "task": {"title": "去机场接人", "date": "周末", "segment": "morning"},
        "weather": {"city": "上海", "date": "周六"},
        "reminder": {"title": "去機場接人", "city": "上海"},  # the same title, Traditional
    },
    "en": {
        "message": "pick someone up at the airport Saturday morning",
        "language": "en",
        "task": {
            "title": "Pick someone up at the airport",
            "date": "saturday",
            "segment": "morning",
        },
        "weather": {"city": "Shanghai", "date": "saturday"},
        "reminder": {"title": "pick someone up at the airport", "city": "Shanghai"},
    },
}


def planner_team() -> None:
    experts = [
        make_agent(name, provider="openai", model="fake", tool_keys=keys, tags=[name])
        for name, keys in PLANNER_TOOLS.items()
    ]
    make_agent(
        "assistant", provider="openai", model="fake", is_entry=True, subagents=experts, max_steps=6
    )


def wait_for_turn(timeout: float = 20) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        root = Run.objects.filter(parent=None).first()
        if root is not None and root.status in FINAL_STATUSES:
            return root
        time.sleep(0.05)
    raise AssertionError("the turn did not finish")


def tool_results(request: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("language", ["zh", "en"])
def test_airport_pickup_creates_the_task_asks_the_weather_and_reminds_friday_evening(
    fake_openai, clock, fixed_weather, language
):
    script = SCRIPTS[language]
    clock.at = datetime(2025, 6, 11, 10, 0, tzinfo=SHANGHAI)  # a Wednesday
    fixed_weather["shanghai"] = "rain"
    planner_team()
    user = user_in("Asia/Shanghai", "wei")
    team = Team(fake_openai)
    team.script(
        "assistant",
        tool_calls(
            ("delegate", {"target": "tasks", "task": f"Add this task: {script['message']}"}),
            ("delegate", {"target": "weather", "task": "Saturday's weather in Shanghai?"}),
        ),
        delegate("reminders", "Schedule a reminder for the airport pickup; it is in Shanghai."),
        text("Added the pickup, rain is expected, and you will be reminded Friday evening."),
    )
    team.script("tasks", tool_call("create_task", script["task"]), text("Added."))
    team.script("weather", tool_call("get_weather", script["weather"]), text("Rain."))
    team.script("reminders", tool_call("schedule_reminder", script["reminder"]), text("Set."))

    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=script["message"])
    root = wait_for_turn()

    assert root.status == "succeeded" and "Friday evening" in root.answer
    task = Task.objects.get(user=user)
    assert (task.title, task.due_date.isoformat(), task.segment) == (
        script["task"]["title"],
        "2025-06-14",
        "morning",
    )
    (forecast,) = tool_results(team.requests["weather"][1])
    assert forecast["ok"] and forecast["result"]["status"] == "success"
    assert forecast["result"]["data"]["forecast"]["condition"] == "rain"
    reminder = Reminder.objects.get(user=user)
    assert reminder.task == task
    assert reminder.remind_at.astimezone(SHANGHAI) == datetime(2025, 6, 13, 20, 0, tzinfo=SHANGHAI)
    assert reminder.remind_at.astimezone(SHANGHAI).strftime("%A %H:%M") == "Friday 20:00"
    with translation.override(script["language"]):  # the reminder reads in the user's language
        rain, umbrella = condition_name("rain"), gettext("rain expected: bring an umbrella")
    assert rain in reminder.content and umbrella in reminder.content
    assert reminder.language == script["language"]
    (scheduled,) = tool_results(team.requests["reminders"][1])
    assert scheduled["result"]["data"]["rule"] == "20:00 the day before"
    shown = ChatMessage.objects.filter(role="tool", tool__name="schedule_reminder").get()
    assert shown.agent["path"] == ["assistant", "reminders"]  # the user saw who did it
