"""A planner tool that needs the user's word asks the user itself (buttons), and the engine
calls it again with the answer, once: the README's airport errand asked twice never dead-ends."""

from __future__ import annotations

import json
import uuid
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from chat.models import ChatMessage
from delegation.humans.models import Audience, InboxItem, ItemStatus
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from reminders.models import Reminder, Task
from tests.humans.helpers import client, decide

pytestmark = pytest.mark.django_db(transaction=True)

ERRAND = {
    "en": "Pick up Anna at the airport on Saturday morning",
    "zh-hans": "周末早上去机场接人",
}


@pytest.fixture
def demo(settings, clock, fixed_weather) -> None:
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    settings.TASKS_RUN_SYNC = True
    fixed_weather["taipei"] = "rain"
    call_command("seed_demo", stdout=StringIO())


def start(user: Any, words: str) -> Run:
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=words)
    return Run.objects.get(pk=sent.run.id)


def pending_question(user: Any) -> InboxItem:
    return InboxItem.objects.get(user=user, status=ItemStatus.PENDING)


def answer(user: Any, item: InboxItem, words: str) -> None:
    response = decide(client(user), item.id, decision="approve", answer=words)
    assert response.status_code == 200, response.content


def errand(user: Any, words: str, *, confirm: str | None = None) -> Run:
    """Run the errand turn, answering the tools' questions as the user would."""
    root = start(user, words)
    for _ in range(5):
        root.refresh_from_db()
        if root.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return root
        item = pending_question(user)
        assert item.audience == Audience.USER and item.group == ""  # the user, not the staff
        if item.tool == "get_weather":
            assert item.options == []
            answer(user, item, "Taipei")
        elif item.tool == "schedule_reminder":  # two tasks of the title now: which one
            assert len(item.options) == 2 and "task_id" not in item.question
            answer(user, item, item.options[-1])
        else:
            assert item.tool == "create_task" and len(item.options) == 2
            assert "confirm" not in item.question
            answer(user, item, item.options[0] if confirm == "yes" else item.options[1])
    root.refresh_from_db()
    return root


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_airport_errand_asked_twice_asks_to_save_the_duplicate_with_buttons(
    taipei_user, demo, language
):
    first = errand(taipei_user, ERRAND[language])
    assert first.status == RunStatus.SUCCEEDED and Task.objects.count() == 1
    assert "Ask the user" not in first.answer and "confirm=true" not in first.answer

    again = errand(taipei_user, ERRAND[language], confirm="yes")
    assert again.status == RunStatus.SUCCEEDED, again.answer
    assert Task.objects.count() == 2  # saved anyway, once
    asked = InboxItem.objects.get(tool="create_task")
    assert asked.final_arguments["confirm"] is True and asked.executed_at is not None
    assert "confirm" not in again.answer and "task_id" not in again.answer
    newest = Task.objects.latest("id")
    assert Reminder.objects.filter(task=newest).count() == 1  # the one the user picked


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_declining_the_duplicate_saves_nothing_and_the_turn_still_answers(
    taipei_user, demo, language
):
    errand(taipei_user, ERRAND[language])
    again = errand(taipei_user, ERRAND[language], confirm="no")
    assert again.status == RunStatus.SUCCEEDED, again.answer
    assert Task.objects.count() == 1
    asked = InboxItem.objects.get(tool="create_task")
    assert asked.final_arguments is None  # nothing ran again
    declined = json.loads(asked.result)["result"]
    assert declined["status"] == "declined" and asked.answer in declined["message"]
    assert declined["message"] in again.answer
    shown = ChatMessage.objects.get(pk=asked.message_id).tool
    assert shown["summary"] == declined["message"] and shown["human"]["status"] == "answered"
