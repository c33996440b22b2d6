"""Reminder tools: the time comes from the rules in the user's timezone, weather adds advice,
and list/cancel see only the user's own reminders."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django.utils import translation

from reminders import weather
from reminders.dates import when_said
from reminders.models import Channel, Reminder, ReminderStatus, Task
from tests.reminders.conftest import TAIPEI, call, user_in

pytestmark = pytest.mark.django_db


def task(user, title="Pick up Anna at the airport", **args):
    return call(user, "create_task", title=title, confirm=True, **args)["data"]["task"]["id"]


def schedule(user, **args):
    return call(user, "schedule_reminder", **args)


def test_a_later_day_is_reminded_at_20_the_evening_before(taipei_user, clock):
    task_id = task(taipei_user, date="saturday", segment="morning")
    result = schedule(taipei_user, task_id=task_id)
    assert result["status"] == "success"
    assert result["message"] == (
        "Reminder set for Fri 13 Jun at 20:00 (Asia/Taipei): no time was asked for it, so "
        "20:00 the day before."
    )
    reminder = Reminder.objects.get()
    assert reminder.remind_at == reminder.due_at == datetime(2025, 6, 13, 20, tzinfo=TAIPEI)
    assert reminder.status == ReminderStatus.PENDING and reminder.user == taipei_user
    assert reminder.content == (
        "Reminder: Pick up Anna at the airport — Saturday 14 June, morning (08:00–12:00)."
    )
    assert result["data"]["reminder"]["remind_at"] == "2025-06-13T20:00+08:00"


def test_today_with_a_time_two_hours_before_and_without_at_8(taipei_user, clock):
    timed = task(taipei_user, title="Call", start="15:00")
    assert schedule(taipei_user, task_id=timed)["data"]["reminder"]["remind_at"] == (
        "2025-06-11T13:00+08:00"
    )
    clock.at = datetime(2025, 6, 11, 7, 0, tzinfo=TAIPEI)
    untimed = task(taipei_user, title="Buy milk")
    assert schedule(taipei_user, task_id=untimed)["data"]["reminder"]["remind_at"] == (
        "2025-06-11T08:00+08:00"
    )


def test_a_time_already_past_is_refused_with_the_reason(taipei_user, clock):
    soon = task(taipei_user, title="Call", start="11:00")
    result = schedule(taipei_user, task_id=soon)
    assert result["status"] == "error"
    assert "two hours before" in result["message"] and "already passed" in result["message"]
    past = task(taipei_user, title="Old", date="yesterday")
    assert "has passed" in schedule(taipei_user, task_id=past)["message"]
    assert not Reminder.objects.exists()


def test_bad_weather_adds_advice_to_the_content(taipei_user, clock, fixed_weather):
    fixed_weather["taipei"] = "rain"
    task_id = task(taipei_user, date="saturday", segment="morning")
    result = schedule(taipei_user, task_id=task_id, city="台北")
    content = Reminder.objects.get().content
    assert "Weather in Taipei: rain" in content and "bring an umbrella" in content
    assert result["data"]["weather"]["condition"] == "rain"


def test_fair_weather_is_mentioned_without_advice(taipei_user, clock, fixed_weather):
    fixed_weather["taipei"] = "clear"
    schedule(taipei_user, task_id=task(taipei_user, date="saturday"), city="Taipei")
    content = Reminder.objects.get().content
    assert "Weather in Taipei: clear" in content and "umbrella" not in content


def test_an_unknown_city_is_an_error_and_sets_nothing(taipei_user, clock, fixed_weather):
    result = schedule(taipei_user, task_id=task(taipei_user, date="saturday"), city="Atlantis")
    assert result["status"] == "error" and "Atlantis" in result["message"]
    assert not Reminder.objects.exists()


def test_weather_service_down_still_sets_the_reminder_and_says_so(taipei_user, clock, monkeypatch):
    class Down:
        name = "down"

        def forecast(self, city, day):
            raise weather.WeatherError("unavailable", "The weather service answered HTTP 503.")

    monkeypatch.setattr(weather, "weather_provider", Down)
    result = schedule(taipei_user, task_id=task(taipei_user, date="saturday"), city="Taipei")
    assert result["status"] == "success" and "No weather advice" in result["message"]
    assert "Weather" not in Reminder.objects.get().content


def test_a_day_beyond_the_forecast_range_skips_weather(taipei_user, clock, fixed_weather):
    result = schedule(taipei_user, task_id=task(taipei_user, date="2025-07-30"), city="Taipei")
    assert result["status"] == "success" and "beyond the forecast range" in result["message"]


def test_a_second_reminder_for_the_same_task_is_a_conflict(taipei_user, clock):
    task_id = task(taipei_user, date="saturday")
    schedule(taipei_user, task_id=task_id)
    again = schedule(taipei_user, title="Pick up Anna at the airport")
    assert again["status"] == "conflict" and again["data"]["reminder"]["task_id"] == task_id
    assert Reminder.objects.count() == 1


def test_ambiguous_or_missing_task(taipei_user, clock):
    task(taipei_user, title="Call mom", date="friday")
    task(taipei_user, title="Call dad", date="friday")
    assert schedule(taipei_user, title="call")["status"] == "need_confirmation"
    assert schedule(taipei_user, title="dentist")["status"] == "error"
    assert not Reminder.objects.exists()


def test_by_email_sets_the_channel_and_warns_when_email_is_off(taipei_user, clock, settings):
    settings.REMINDER_EMAIL_FROM = ""
    result = schedule(taipei_user, task_id=task(taipei_user, date="saturday"), by_email=True)
    assert Reminder.objects.get().channel == Channel.EMAIL
    assert "chat only" in result["message"]


def test_the_users_own_timezone_decides(db, clock):
    clock.at = datetime(2025, 6, 13, 16, 0, tzinfo=UTC)  # Sat 01:00 Tokyo, Fri 09:00 LA
    for zone, expected in [
        ("Asia/Tokyo", "2025-06-14T08:00+09:00"),
        ("America/Los_Angeles", "2025-06-13T20:00-07:00"),
    ]:
        user = user_in(zone)
        result = schedule(user, task_id=task(user, date="saturday"))
        assert result["data"]["reminder"]["remind_at"] == expected, zone


def test_list_and_cancel_reminders(taipei_user, clock):
    first = schedule(taipei_user, task_id=task(taipei_user, title="Airport", date="saturday"))
    schedule(taipei_user, task_id=task(taipei_user, title="Dentist", date="friday"))
    listed = call(taipei_user, "list_reminders")
    assert [r["remind_at"][:16] for r in listed["data"]["reminders"]] == [
        "2025-06-12T20:00",
        "2025-06-13T20:00",
    ]
    cancelled = call(taipei_user, "cancel_reminder", title="dentist")
    assert cancelled["status"] == "success"
    assert call(taipei_user, "cancel_reminder", title="dentist")["status"] == "error"  # none left
    reminder_id = first["data"]["reminder"]["id"]
    assert call(taipei_user, "cancel_reminder", reminder_id=reminder_id)["status"] == "success"
    again = call(taipei_user, "cancel_reminder", reminder_id=reminder_id)
    assert again["status"] == "success" and "already cancelled" in again["message"]
    assert call(taipei_user, "list_reminders")["message"] == "No pending reminders."
    assert len(call(taipei_user, "list_reminders", status="all")["data"]["reminders"]) == 2
    assert call(taipei_user, "cancel_reminder")["status"] == "error"


def test_a_sent_reminder_cannot_be_cancelled(taipei_user, clock):
    reminder_id = schedule(taipei_user, task_id=task(taipei_user, date="saturday"))["data"][
        "reminder"
    ]["id"]
    Reminder.objects.filter(pk=reminder_id).update(status=ReminderStatus.SENT)
    result = call(taipei_user, "cancel_reminder", reminder_id=reminder_id)
    assert result["status"] == "error" and "already sent" in result["message"]
    assert Reminder.objects.get().status == ReminderStatus.SENT


def test_another_users_reminders_are_invisible(taipei_user, clock):
    mallory = user_in("Asia/Taipei", "mallory")
    reminder_id = schedule(taipei_user, task_id=task(taipei_user, date="saturday"))["data"][
        "reminder"
    ]["id"]
    assert call(mallory, "list_reminders", status="all")["data"]["reminders"] == []
    refused = call(mallory, "cancel_reminder", reminder_id=reminder_id)
    assert refused["status"] == "error" and f"no reminder #{reminder_id}" in refused["message"]
    assert schedule(mallory, title="Pick up Anna at the airport")["status"] == "error"
    assert Reminder.objects.get().status == ReminderStatus.PENDING


def test_a_reminder_of_a_task_not_yet_planned_creates_it_with_its_date(taipei_user, clock):
    result = schedule(taipei_user, title="Call Ana", date="tomorrow", start="9")
    assert result["status"] == "success"
    assert result["message"].startswith("Created “Call Ana” on Thursday 12 June 2025")
    # At the time asked, not the evening before, and the answer says when.
    assert "Reminder set for tomorrow (Thu 12 Jun) at 09:00 (Asia/Taipei)." in result["message"]
    assert Reminder.objects.get().remind_at == datetime(2025, 6, 12, 9, tzinfo=TAIPEI)
    task = Task.objects.get()
    assert (task.due_date.isoformat(), task.start_time.isoformat()) == ("2025-06-12", "09:00:00")
    assert Reminder.objects.get().task == task
    assert result["data"]["task"]["id"] == task.pk and "reminder" in result["data"]


def test_a_new_task_whose_reminder_cannot_be_set_is_not_kept(taipei_user, clock):
    result = schedule(  # the task is tomorrow, but 09:00 today, asked for, has passed
        taipei_user, title="Call Ana", date="tomorrow", remind_date="today", remind_time="09:00"
    )
    assert result["status"] == "error" and "already passed" in result["message"]
    assert not Task.objects.exists() and not Reminder.objects.exists()


def test_a_new_task_with_a_vague_hour_is_asked_back_and_nothing_is_saved(taipei_user, clock):
    result = schedule(taipei_user, title="Call Ana", date="tomorrow", start="3")
    assert result["status"] == "need_confirmation"
    assert not Task.objects.exists() and not Reminder.objects.exists()


def test_no_task_and_no_date_says_what_to_give(taipei_user, clock):
    result = schedule(taipei_user, title="Call Ana")
    assert result["status"] == "error"
    assert result["message"] == (
        "No pending task matches “Call Ana”. Give its date (and time) to create it with the "
        "reminder."
    )
    assert not Task.objects.exists()


def test_a_near_miss_asks_instead_of_creating_a_second_task(taipei_user, clock):
    task(taipei_user, title="Call mom", date="tomorrow")
    result = schedule(taipei_user, title="Call dad", date="tomorrow", start="9")
    assert result["status"] == "need_confirmation"
    assert Task.objects.count() == 1 and not Reminder.objects.exists()


def test_an_unknown_task_id_is_never_created(taipei_user, clock):
    result = schedule(taipei_user, task_id=999, date="tomorrow")
    assert result["status"] == "error" and "#999" in result["message"]
    assert not Task.objects.exists()


def test_a_task_of_the_title_at_another_time_is_asked_about_not_guessed(taipei_user, clock):
    task_id = task(taipei_user, title="Call Ana", date="saturday", start="10:00")
    result = schedule(taipei_user, title="Call Ana", date="tomorrow", start="9")
    assert result["status"] == "need_confirmation"
    assert result["message"].startswith("“Call Ana” is planned for Saturday 14 June 2025, 10:00")
    assert result["data"]["candidates"][0]["id"] == task_id
    assert Task.objects.count() == 1 and not Reminder.objects.exists()
    same = schedule(taipei_user, title="call ana", date="saturday", start="10:00")
    assert same["status"] == "success"  # the same time: that task, no question
    Reminder.objects.all().delete()
    chosen = schedule(taipei_user, task_id=task_id, date="tomorrow")
    assert chosen["status"] == "success"  # chosen by id: its own time


def test_a_time_asked_for_the_reminder_is_when_it_comes(taipei_user, clock):
    task_id = task(taipei_user, date="saturday", start="10:00")
    result = schedule(taipei_user, task_id=task_id, remind_time="8am")
    assert result["status"] == "success" and result["data"]["rule"] == "as asked"
    assert result["message"] == "Reminder set for Sat 14 Jun at 08:00 (Asia/Taipei)."
    assert Reminder.objects.get().remind_at == datetime(2025, 6, 14, 8, tzinfo=TAIPEI)


def test_a_reminder_time_on_another_day_and_in_chinese_words(taipei_user, clock):
    task_id = task(taipei_user, date="saturday", start="10:00")
    result = schedule(taipei_user, task_id=task_id, remind_date="明天", remind_time="下午三點")
    assert result["message"] == "Reminder set for tomorrow (Thu 12 Jun) at 15:00 (Asia/Taipei)."
    Reminder.objects.all().delete()
    tonight = schedule(taipei_user, task_id=task_id, remind_time="今晚8点")
    assert tonight["message"] == "Reminder set for today (Wed 11 Jun) at 20:00 (Asia/Taipei)."


def test_a_reminder_time_already_past_or_vague_sets_nothing(taipei_user, clock):
    task_id = task(taipei_user, date="saturday", start="10:00")
    past = schedule(taipei_user, task_id=task_id, remind_date="today", remind_time="09:00")
    assert past["status"] == "error" and "has already passed" in past["message"]
    vague = schedule(taipei_user, task_id=task_id, remind_time="3")
    assert vague["status"] == "need_confirmation" and vague["data"]["times"] == ["03:00", "15:00"]
    no_time = schedule(taipei_user, task_id=task_id, remind_date="friday")
    assert no_time["status"] == "error" and "remind_time" in no_time["message"]
    assert not Reminder.objects.exists()


def test_a_time_said_with_the_title_of_a_planned_task_is_the_reminder_time(taipei_user, clock):
    task(taipei_user, title="Call Ana", date="tomorrow", start="09:00")
    result = schedule(taipei_user, title="call ana", date="tomorrow", start="9am")
    assert result["status"] == "success"
    assert Reminder.objects.get().remind_at == datetime(2025, 6, 12, 9, tzinfo=TAIPEI)


def test_no_time_named_keeps_the_default_rules(taipei_user, clock):
    task(taipei_user, title="Call Ana", date="tomorrow", start="09:00")
    result = schedule(taipei_user, title="call ana")
    assert result["data"]["rule"] == "20:00 the day before"
    assert Reminder.objects.get().remind_at == datetime(2025, 6, 11, 20, tzinfo=TAIPEI)


@pytest.mark.parametrize(
    ("language", "expected"),
    [("zh-hant", "Asia/Taipei"), ("zh-hans", "Asia/Taipei"), ("en", "tomorrow (Thu 12 Jun)")],
)
def test_the_answer_says_when_in_the_users_language(taipei_user, clock, language, expected):
    with translation.override(language):
        result = schedule(taipei_user, title="開會", date="明天", start="下午三點")
        with_day = when_said(datetime(2025, 6, 12, 15, tzinfo=TAIPEI), date(2025, 6, 11))
    assert with_day in result["message"] and expected in result["message"]
    assert Reminder.objects.get().remind_at == datetime(2025, 6, 12, 15, tzinfo=TAIPEI)
