"""Short chat titles from first messages, and scheduled prompts stored as such."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from delegation.turns import title_from, turn_start


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("what is 6*7?", "What is 6*7"),
        (
            "Hi, can you please tell me how many days of sick leave I get?",
            "Tell me how many days of sick leave I get",
        ),
        ("Plan the offsite\nwith details on the second line", "Plan the offsite"),
        ("請問財務部最新的檔案是什麼？", "財務部最新的檔案是什麼"),
        (
            "请帮我安排周末去机场接人的事情并提醒我带上雨伞和外套",
            "帮我安排周末去机场接人的事情并提醒…",
        ),
        ("hello", "Hello"),
        ("   ?   ", "?"),
        ("Supercalifragilisticexpialidocious" * 3, "SupercalifragilisticexpialidociousSuperca…"),
    ],
)
def test_titles_are_short_and_skip_courtesies(text, title):
    assert title_from(text) == title
    assert len(title) <= 42


@pytest.mark.django_db(transaction=True)
def test_first_message_names_the_chat_and_a_scheduled_prompt_says_so(user, entry_agent, settings):
    settings.TASKS_RUN_SYNC = True
    sid = uuid.uuid4()
    turn_start(
        user=user,
        session_id=sid,
        message_id=uuid.uuid4(),
        text="Could you give me the weekly finance report for the team, please?",
    )
    assert ChatSession.objects.get(pk=sid).title == "Give me the weekly finance report for…"
    sent = turn_start(
        user=user, session_id=sid, message_id=uuid.uuid4(), text="Weekly report", origin="scheduled"
    )
    assert ChatMessage.objects.get(pk=sent.message.id).origin == "scheduled"
    with pytest.raises(ValueError):
        turn_start(user=user, session_id=sid, message_id=uuid.uuid4(), text="x", origin="robot")


@pytest.mark.django_db(transaction=True)
def test_a_scheduled_run_sends_its_prompt_marked_as_scheduled(user, entry_agent, settings):
    from django.utils import timezone
    from django_celery_beat.models import CrontabSchedule

    from reminders.models import ScheduledPrompt
    from reminders.schedule_words import CronSpec
    from reminders.services.schedules import scheduled_prompt_run, scheduled_prompt_save
    from reminders.slots import next_slot

    settings.TASKS_RUN_SYNC = True
    crontab = CrontabSchedule.objects.create(minute="0", hour="8", day_of_week="1")
    scheduled = scheduled_prompt_save(
        scheduled=ScheduledPrompt(
            name="Weekly", user=user, agent=entry_agent, prompt="what is 6*7?", crontab=crontab
        )
    )
    # Its first Monday 08:00 (UTC) after it was made: slots before it never run.
    monday = next_slot(CronSpec(minute="0", hour="8", day_of_week="1"), "UTC", timezone.now())
    assert scheduled_prompt_run(scheduled_id=scheduled.pk, now=monday)
    message = ChatMessage.objects.get(role="user")
    assert (message.content, message.origin) == ("what is 6*7?", "scheduled")
