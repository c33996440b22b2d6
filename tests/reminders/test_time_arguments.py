"""Tools that save a time read it as people say it (明天下午3点 is 15:00 tomorrow) and ask back,
saving nothing, when the words have two readings (3点, "next saturday" on a Wednesday)."""

from __future__ import annotations

from datetime import date, time

import pytest

from reminders.models import Task
from tests.reminders.conftest import call

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("下午3点", time(15)),
        ("下午三點", time(15)),
        ("晚上8点", time(20)),
        ("傍晚6點", time(18)),
        ("中午12点", time(12)),
        ("午後2點", time(14)),
        ("夜里9点", time(21)),
        ("上午9点", time(9)),
        ("早上七點", time(7)),
        ("凌晨2点", time(2)),
        ("十点半", time(10, 30)),
        ("下午两点一刻", time(14, 15)),
        ("下午三點半", time(15, 30)),
        ("3pm", time(15)),
        ("3 p.m.", time(15)),
        ("15:00", time(15)),
    ],
)
def test_create_task_saves_the_time_that_was_said(taipei_user, clock, start, expected):
    result = call(taipei_user, "create_task", title="开会", date="明天", start=start)
    assert result["status"] == "success", result
    saved = Task.objects.get()
    assert (saved.due_date, saved.start_time) == (date(2025, 6, 12), expected)


def test_a_bare_small_hour_is_asked_back_and_saves_nothing(taipei_user, clock):
    result = call(taipei_user, "create_task", title="开会", date="明天", start="3点")
    assert result["status"] == "need_confirmation"
    assert result["data"] == {"reason": "ambiguous_time", "times": ["03:00", "15:00"]}
    assert not Task.objects.exists()
    clear = call(taipei_user, "create_task", title="开会", date="明天", start="15:00")
    assert clear["status"] == "success"


def test_midnight_said_as_evening_is_refused_clearly(taipei_user, clock):
    result = call(taipei_user, "create_task", title="赶飞机", date="明天", start="晚上12点")
    assert result["status"] == "error" and "falls on the next day" in result["message"]
    assert not Task.objects.exists()


def test_tomorrow_evening_in_the_time_gives_the_day(taipei_user, clock):
    result = call(taipei_user, "create_task", title="吃饭", start="明晚8点")
    assert result["status"] == "success"
    assert (Task.objects.get().due_date, Task.objects.get().start_time) == (
        date(2025, 6, 12),
        time(20),
    )
    clash = call(taipei_user, "create_task", title="看电影", date="周五", start="明晚8点")
    assert clash["status"] == "error" and "name different days" in clash["message"]
    assert Task.objects.count() == 1


def test_next_saturday_on_a_wednesday_is_asked_back(taipei_user, clock):
    result = call(taipei_user, "create_task", title="Hike", date="next saturday")
    assert result["status"] == "need_confirmation"
    assert result["data"] == {"reason": "ambiguous_date", "dates": ["2025-06-21", "2025-06-14"]}
    assert not Task.objects.exists()
    forced = call(taipei_user, "create_task", title="Hike", date="next saturday", confirm=True)
    assert forced["status"] == "need_confirmation"  # confirm does not pick a date for the user
    assert call(taipei_user, "create_task", title="Hike", date="2025-06-21")["status"] == "success"
    assert call(taipei_user, "create_task", title="Run", date="next monday")["status"] == "success"


def test_modify_task_reads_times_the_same_way(taipei_user, clock):
    task_id = call(taipei_user, "create_task", title="开会", date="明天", start="09:00")["data"][
        "task"
    ]["id"]
    moved = call(taipei_user, "modify_task", task_id=task_id, start="下午3點")
    assert moved["status"] == "success" and moved["data"]["task"]["start"] == "15:00"
    vague = call(taipei_user, "modify_task", task_id=task_id, start="4点")
    assert vague["status"] == "need_confirmation"
    unclear_day = call(taipei_user, "modify_task", task_id=task_id, date="next friday")
    assert unclear_day["status"] == "need_confirmation"
    tomorrow_evening = call(taipei_user, "modify_task", task_id=task_id, start="明晚7点")
    assert tomorrow_evening["data"]["task"]["start"] == "19:00"
    saved = Task.objects.get()
    assert (saved.due_date, saved.start_time) == (date(2025, 6, 12), time(19))


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("下午3点", "5点", (time(15), time(17))),  # only 17:00 ends after 15:00
        ("下午1点", "3点", (time(13), time(15))),
        ("3pm", "5", (time(15), time(17))),
    ],
)
def test_a_bare_hour_is_settled_by_the_other_end_when_one_reading_fits(
    taipei_user, clock, start, end, expected
):
    result = call(taipei_user, "create_task", title="开会", date="明天", start=start, end=end)
    assert result["status"] == "success", result
    saved = Task.objects.get()
    assert (saved.start_time, saved.end_time) == expected


@pytest.mark.parametrize(("start", "end"), [("凌晨1点", "3点"), ("3点", "下午5点")])
def test_a_bare_hour_that_both_readings_fit_is_still_asked(taipei_user, clock, start, end):
    result = call(taipei_user, "create_task", title="赶车", date="明天", start=start, end=end)
    assert result["status"] == "need_confirmation" and result["data"]["times"] == ["03:00", "15:00"]
    assert not Task.objects.exists()


def test_modify_task_settles_a_bare_end_by_the_tasks_start(taipei_user, clock):
    task_id = call(taipei_user, "create_task", title="开会", date="明天", start="下午2点")["data"][
        "task"
    ]["id"]
    result = call(taipei_user, "modify_task", task_id=task_id, end="4点")
    assert result["status"] == "success" and result["data"]["task"]["end"] == "16:00"
