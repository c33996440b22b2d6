"""Time helpers: dates and times as people say them, DST-safe instants, windows and overlaps."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from reminders.dates import (
    date_readings,
    describe_window,
    local_datetime,
    parse_date,
    task_window,
)

WEDNESDAY = date(2025, 6, 11)
NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("2025-06-20", date(2025, 6, 20)),
        ("2025/06/20", date(2025, 6, 20)),
        ("today", WEDNESDAY),
        ("Tomorrow", date(2025, 6, 12)),
        ("day after tomorrow", date(2025, 6, 13)),
        ("yesterday", date(2025, 6, 10)),
        ("wednesday", WEDNESDAY),  # a weekday is the coming one, today included
        ("saturday", date(2025, 6, 14)),
        ("this saturday", date(2025, 6, 14)),
        ("sat", date(2025, 6, 14)),
        ("monday", date(2025, 6, 16)),
        ("next saturday", date(2025, 6, 21)),  # next week's
        ("next monday", date(2025, 6, 16)),
        ("weekend", date(2025, 6, 14)),
        ("next weekend", date(2025, 6, 21)),
        ("明天", date(2025, 6, 12)),
        ("后天", date(2025, 6, 13)),
        ("周六", date(2025, 6, 14)),
        ("星期天", date(2025, 6, 15)),
        ("下周六", date(2025, 6, 21)),
        ("周末", date(2025, 6, 14)),
        ("下周末", date(2025, 6, 21)),
        ("下週六", date(2025, 6, 21)),  # Traditional script
        ("這週末", date(2025, 6, 14)),
        ("禮拜天", date(2025, 6, 15)),
        ("後天", date(2025, 6, 13)),
        ("明早", date(2025, 6, 12)),  # tomorrow morning
        ("明晚", date(2025, 6, 12)),
        ("这周五", date(2025, 6, 13)),
        ("本週五", date(2025, 6, 13)),
    ],
)
def test_parse_date_reads_iso_relative_words_and_weekdays(words, expected):
    assert parse_date(words, WEDNESDAY) == expected


def test_weekend_on_a_sunday_is_that_sunday():
    sunday = date(2025, 6, 15)
    assert parse_date("weekend", sunday) == sunday
    assert parse_date("周末", date(2025, 6, 14)) == date(2025, 6, 14)  # on Saturday: today


@pytest.mark.parametrize(
    ("words", "today", "expected"),
    [
        ("这周一", WEDNESDAY, date(2025, 6, 9)),  # this week's Monday: two days ago
        ("這週一", WEDNESDAY, date(2025, 6, 9)),
        ("这周六", date(2025, 6, 15), date(2025, 6, 14)),  # said on Sunday: yesterday
        ("下周一", WEDNESDAY, date(2025, 6, 16)),
        ("周一", WEDNESDAY, date(2025, 6, 16)),
    ],
)
def test_this_weeks_day_in_chinese_is_in_this_calendar_week_even_if_past(words, today, expected):
    assert parse_date(words, today) == expected


@pytest.mark.parametrize(
    ("words", "today", "readings"),
    [
        ("next saturday", WEDNESDAY, [date(2025, 6, 21), date(2025, 6, 14)]),
        ("next weekend", WEDNESDAY, [date(2025, 6, 21), date(2025, 6, 14)]),
        ("next sunday", date(2025, 6, 14), [date(2025, 6, 22), date(2025, 6, 15)]),
        ("next monday", WEDNESDAY, [date(2025, 6, 16)]),  # the coming Monday is next week's
        ("next wednesday", WEDNESDAY, [date(2025, 6, 18)]),
        ("next weekend", date(2025, 6, 14), [date(2025, 6, 21)]),
        ("saturday", WEDNESDAY, [date(2025, 6, 14)]),
        ("下周六", WEDNESDAY, [date(2025, 6, 21)]),  # Chinese says which week
    ],
)
def test_next_weekday_said_early_in_the_week_has_two_readings(words, today, readings):
    assert date_readings(words, today) == readings


@pytest.mark.parametrize("words", ["", "  ", "someday", "2025-02-30", "next blursday", "周八"])
def test_parse_date_refuses_what_it_cannot_read_with_a_reason(words):
    with pytest.raises(ValueError, match=r"date|empty"):
        parse_date(words, WEDNESDAY)


def test_local_datetime_moves_a_time_in_the_spring_forward_gap_forward():
    # 2025-03-09 02:30 does not exist in New York (02:00 EST -> 03:00 EDT).
    moment = local_datetime(date(2025, 3, 9), time(2, 30), NEW_YORK)
    assert (moment.hour, moment.minute) == (3, 30)
    assert moment.utcoffset() == timedelta(hours=-4)


def test_local_datetime_takes_the_first_of_an_ambiguous_fall_back_time():
    # 2025-11-02 01:30 happens twice in New York; the first is still EDT.
    moment = local_datetime(date(2025, 11, 2), time(1, 30), NEW_YORK)
    assert moment.utcoffset() == timedelta(hours=-4)
    assert moment.astimezone(UTC) == datetime(2025, 11, 2, 5, 30, tzinfo=UTC)


def test_windows_overlap_but_touching_ends_do_not():
    def window(start, end):
        return task_window(
            day=WEDNESDAY,
            start=time(*start),
            end=time(*end),
            segment="",
            zone=NEW_YORK,
            default_minutes=60,
        )

    assert window((10, 0), (11, 0)).overlaps(window((10, 30), (11, 30)))
    assert window((10, 0), (12, 0)).overlaps(window((10, 30), (11, 0)))  # contained
    assert not window((10, 0), (11, 0)).overlaps(window((11, 0), (12, 0)))
    assert not window((11, 0), (12, 0)).overlaps(window((10, 0), (11, 0)))


def test_task_window_defaults_the_length_and_marks_segments_vague():
    start_only = task_window(
        day=WEDNESDAY, start=time(9), end=None, segment="", zone=NEW_YORK, default_minutes=45
    )
    assert start_only.end - start_only.start == timedelta(minutes=45) and start_only.exact
    morning = task_window(
        day=WEDNESDAY, start=None, end=None, segment="morning", zone=NEW_YORK, default_minutes=60
    )
    local = (morning.start.astimezone(NEW_YORK).hour, morning.end.astimezone(NEW_YORK).hour)
    assert (*local, morning.exact) == (8, 12, False)
    none = task_window(
        day=WEDNESDAY, start=None, end=None, segment="", zone=NEW_YORK, default_minutes=60
    )
    assert none is None


def test_a_task_across_fall_back_lasts_its_elapsed_time():
    # 00:30–02:30 on 2025-11-02 in New York is three real hours (01:00–02:00 happens twice).
    night = task_window(
        day=date(2025, 11, 2),
        start=time(0, 30),
        end=time(2, 30),
        segment="",
        zone=NEW_YORK,
        default_minutes=60,
    )
    assert night.end - night.start == timedelta(hours=3)


def test_describe_window():
    assert describe_window(start=time(9), end=time(10, 30), segment="") == "09:00–10:30"
    assert describe_window(start=time(9), end=None, segment="") == "09:00"
    assert describe_window(start=None, end=None, segment="evening") == "evening (18:00–22:00)"
    assert describe_window(start=None, end=None, segment="") == "any time"
