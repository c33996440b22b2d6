"""The planner answers in the active language: tool messages, reminder texts and the late notice
read in Simplified or Traditional Chinese, with Chinese dates and every placeholder filled.
(These need the reminders strings in locale/; English is covered by the other modules.)"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import translation

from chat.models import ChatMessage, ChatSession
from reminders.delivery import reminder_message_id, reminder_session_id
from reminders.dispatch import reminders_dispatch
from reminders.models import Reminder
from tests.reminders.conftest import TAIPEI, call

pytestmark = pytest.mark.django_db

CHINESE = ["zh-hans", "zh-hant"]
_HAN = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH_WORDS = re.compile(r"\b(?:the|is|on|for|and|or|at|was|has)\b", re.IGNORECASE)


def said(language: str, key: str, **args) -> dict:
    """A tool's result when the user's run is in `language`."""
    with translation.override(language):
        return call(args.pop("user"), key, **args)


def assert_chinese(text: str) -> None:
    """Written in Chinese: Han characters, no English sentence words, no empty placeholder."""
    assert _HAN.search(text), text
    assert not _ENGLISH_WORDS.search(text), text
    assert "%(" not in text and ")s" not in text, text
    assert "。 " not in text, text  # Chinese sentences follow each other without a space


@pytest.mark.parametrize("language", CHINESE)
def test_a_created_task_is_reported_with_a_chinese_date(taipei_user, clock, language):
    result = said(
        language, "create_task", user=taipei_user, title="牙医", date="2025-06-14", start="10:00"
    )
    assert result["status"] == "success"
    message = result["message"]
    assert_chinese(message)
    assert "牙医" in message and "6月14日" in message and "星期六" in message
    assert "10:00" in message
    assert result["data"]["task"]["weekday"] == "Saturday"  # data stays language-neutral


@pytest.mark.parametrize("language", CHINESE)
def test_a_day_segment_reads_in_chinese(taipei_user, clock, language):
    result = said(
        language, "create_task", user=taipei_user, title="接人", date="saturday", segment="morning"
    )
    assert_chinese(result["message"])
    assert "上午" in result["message"] and "08:00" in result["message"]
    assert result["data"]["task"]["segment"] == "morning"


@pytest.mark.parametrize("language", CHINESE)
def test_a_conflict_names_the_clashing_task_in_chinese(taipei_user, clock, language):
    said(
        language,
        "create_task",
        user=taipei_user,
        title="Standup",
        date="friday",
        start="10:00",
        end="11:00",
    )
    clash = said(
        language,
        "create_task",
        user=taipei_user,
        title="Review",
        date="friday",
        start="10:30",
        end="11:30",
    )
    assert clash["status"] == "conflict"
    assert_chinese(clash["message"].replace("Standup", "").replace("confirm=true", ""))
    assert "Standup" in clash["message"] and "10:00–11:00" in clash["message"]


@pytest.mark.parametrize("language", CHINESE)
def test_a_past_time_asks_for_confirmation_in_chinese(taipei_user, clock, language):
    asked = said(language, "create_task", user=taipei_user, title="开会", start="09:00")
    assert asked["status"] == "need_confirmation"
    assert_chinese(asked["message"].replace("confirm=true", ""))
    assert "09:00" in asked["message"] and "10:00" in asked["message"]


@pytest.mark.parametrize("language", CHINESE)
def test_an_ambiguous_date_lists_both_readings_with_chinese_dates(taipei_user, clock, language):
    asked = said(language, "create_task", user=taipei_user, title="开会", date="next friday")
    assert asked["status"] == "need_confirmation" and asked["data"]["reason"] == "ambiguous_date"
    message = asked["message"].replace("next friday", "").replace("YYYY-MM-DD", "")
    assert_chinese(message)
    assert "6月20日" in message and "6月13日" in message and "星期五" in message


@pytest.mark.parametrize("language", CHINESE)
def test_bad_arguments_are_explained_in_chinese(taipei_user, clock, language):
    backwards = said(
        language, "create_task", user=taipei_user, title="开会", start="11:00", end="10:00"
    )
    assert backwards["status"] == "error"
    assert_chinese(backwards["message"])
    unknown = said(language, "finish_task", user=taipei_user, title="遛狗")
    assert unknown["status"] == "error"
    assert_chinese(unknown["message"]) and "遛狗" in unknown["message"]
    unreadable = said(language, "create_task", user=taipei_user, title="开会", date="someday")
    assert unreadable["status"] == "error" and "someday" in unreadable["message"]
    assert _HAN.search(unreadable["message"]) and "Cannot read" not in unreadable["message"]


@pytest.mark.parametrize("language", CHINESE)
def test_a_reminder_is_written_in_the_users_language(taipei_user, clock, fixed_weather, language):
    fixed_weather["taipei"] = "rain"
    said(language, "create_task", user=taipei_user, title="接机", date="saturday", start="09:00")
    result = said(language, "schedule_reminder", user=taipei_user, title="接机", city="Taipei")
    assert result["status"] == "success"
    assert_chinese(result["message"].replace("Asia/Taipei", ""))
    assert "6月13日" in result["message"] and "20:00" in result["message"]
    reminder = Reminder.objects.get()
    assert reminder.language == language
    headline, weather_line = reminder.content.split("\n")
    assert_chinese(headline)
    assert "接机" in headline and "6月14日" in headline and "09:00" in headline
    assert_chinese(weather_line.replace("Taipei", ""))
    assert "Taipei" in weather_line and "°C" in weather_line and "%" in weather_line
    assert "bring an umbrella" not in weather_line  # the advice is translated too


@pytest.mark.parametrize("language", CHINESE)
def test_the_late_notice_follows_the_reminders_language(taipei_user, clock, language):
    said(language, "create_task", user=taipei_user, title="接机", date="saturday", start="09:00")
    said(language, "schedule_reminder", user=taipei_user, title="接机")
    reminder = Reminder.objects.get()
    # The dispatcher runs outside any user's run: the site's language (English) is active.
    assert not translation.get_language().startswith("zh")
    reminders_dispatch(now=reminder.remind_at + timedelta(hours=1))
    content = ChatMessage.objects.get(pk=reminder_message_id(reminder.pk)).content
    assert content.startswith(reminder.content)
    late = content.rsplit("\n", 1)[1]
    assert_chinese(late)
    assert "6月13日" in late and "星期五" in late and "20:00" in late
    session = ChatSession.objects.get(pk=reminder_session_id(taipei_user.pk))
    assert _HAN.search(session.title)


def test_a_reminder_saved_before_languages_were_recorded_stays_english(taipei_user):
    at = datetime(2025, 6, 13, 20, tzinfo=TAIPEI)
    reminder = Reminder.objects.create(
        user=taipei_user, remind_at=at, due_at=at, content="Reminder: call Anna."
    )
    with translation.override("zh-hans"):
        reminders_dispatch(now=at + timedelta(hours=1))
    content = ChatMessage.objects.get(pk=reminder_message_id(reminder.pk)).content
    assert content == "Reminder: call Anna.\n(Delivered late: it was due Friday 13 June 20:00.)"
