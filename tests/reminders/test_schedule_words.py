"""Schedules in plain words (English, both Chinese scripts, crontab) to crontab fields and back."""

from __future__ import annotations

import pytest
from django.utils import translation

from reminders.schedule_words import CronSpec, describe_schedule, parse_schedule


@pytest.mark.parametrize(
    ("words", "fields"),
    [
        ("每週一 09:00", ("0", "9", "1", "*")),
        ("每周一 09:00", ("0", "9", "1", "*")),
        ("every Monday at 9", ("0", "9", "1", "*")),
        ("weekdays 08:30", ("30", "8", "1-5", "*")),
        ("工作日 上午8点半", ("30", "8", "1-5", "*")),
        ("每天早上8點", ("0", "8", "*", "*")),
        ("daily at 6 pm", ("0", "18", "*", "*")),
        ("weekends at noon", ("0", "12", "0,6", "*")),
        ("every mon and thu at 7:15 pm", ("15", "19", "1,4", "*")),
        ("每週一、四 下午3點", ("0", "15", "1,4", "*")),
        ("每月1號 10:00", ("0", "10", "*", "1")),
        ("0 9 * * 1", ("0", "9", "1", "*")),
        ("*/15 8-18 * * 1-5", ("*/15", "8-18", "1-5", "*")),
    ],
)
def test_words_become_crontab_fields(words, fields):
    spec = parse_schedule(words)
    assert (spec.minute, spec.hour, spec.day_of_week, spec.day_of_month) == fields


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        ("", "Write when it runs"),
        ("every Monday", "No time of day"),
        ("9:00", "Say which days"),
        ("every monday at 3", "could be 03:00 or 15:00"),
        ("每週一 晚上12點", "next day"),
        ("每月40號 10:00", "days 1 to 31"),
        ("61 9 * * *", "not a valid crontab expression"),
    ],
)
def test_bad_words_say_what_to_write(words, reason):
    with pytest.raises(ValueError, match=reason):
        parse_schedule(words)


def test_a_schedule_reads_back_in_words():
    assert describe_schedule(CronSpec("0", "9", "1"), "Asia/Taipei") == (
        "every Monday at 09:00 (Asia/Taipei)"
    )
    assert describe_schedule(CronSpec("30", "8", "1-5")) == "weekdays at 08:30"
    assert describe_schedule(CronSpec("0", "10", day_of_month="1")) == (
        "on day 1 of every month at 10:00"
    )
    assert describe_schedule(CronSpec("*/15", "8-18", "1-5")) == "crontab “*/15 8-18 * * 1-5”"
    with translation.override("zh-hant"):
        assert "星期一" in describe_schedule(CronSpec("0", "9", "1,4"))
        assert "、" in describe_schedule(CronSpec("0", "9", "1,4"))
