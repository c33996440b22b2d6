"""Times of day as people say them: afternoon and evening words shift the hour, morning words
do not, Chinese numerals in both scripts, English forms, and what is refused or asked back."""

from __future__ import annotations

from datetime import time

import pytest

from reminders.time_words import TIME_WORDS, parse_time, read_clock


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # afternoon and evening words shift a 12-hour hour; each in both scripts
        ("下午3点", time(15)),
        ("下午3點", time(15)),
        ("下午三点", time(15)),
        ("下午 3 点", time(15)),
        ("下午3:30", time(15, 30)),
        ("下午15点", time(15)),  # already 24-hour
        ("晚上8点", time(20)),
        ("晚上八點", time(20)),
        ("傍晚6点", time(18)),
        ("傍晚六點", time(18)),
        ("中午12点", time(12)),  # noon stays noon
        ("中午12點半", time(12, 30)),
        ("中午1点", time(13)),
        ("午後2點", time(14)),
        ("午后2点", time(14)),
        ("夜里11点", time(23)),
        ("夜裡九點", time(21)),
        ("今晚7点", time(19)),
        ("明晚8點", time(20)),
        ("3pm", time(15)),
        ("3 p.m.", time(15)),
        ("3 P.M.", time(15)),
        ("2:30 pm", time(14, 30)),
        ("12pm", time(12)),
        ("8 in the evening", time(20)),
        ("noon", time(12)),
        # morning words do not shift
        ("上午9点", time(9)),
        ("上午9點", time(9)),
        ("早上7点", time(7)),
        ("早上七點", time(7)),
        ("凌晨2点", time(2)),
        ("凌晨兩點", time(2)),
        ("凌晨12点", time(0)),
        ("明早8点", time(8)),
        ("明早八點", time(8)),
        ("9am", time(9)),
        ("9 a.m.", time(9)),
        ("12am", time(0)),
        # Chinese numerals and minute words, both scripts
        ("十点半", time(10, 30)),
        ("十點半", time(10, 30)),
        ("十一点四十五分", time(11, 45)),
        ("九点零五", time(9, 5)),
        ("十二点", time(12)),
        ("下午两点一刻", time(14, 15)),
        ("下午兩點三刻", time(14, 45)),
        ("下午三點半", time(15, 30)),
        ("八点钟", time(8)),
        # plain 24-hour forms
        ("15:00", time(15)),
        ("14:30", time(14, 30)),
        ("09:05", time(9, 5)),
        ("9", time(9)),
        ("14点30", time(14, 30)),
        ("14點30分", time(14, 30)),
        ("8点", time(8)),
        ("0点", time(0)),
        ("１５：００", time(15)),  # full-width
    ],
)
def test_times_of_day_read_in_24_hours(words, expected):
    assert parse_time(words) == expected


@pytest.mark.parametrize("words", ["晚上12点", "晚上12點", "夜里1点", "夜裡一點", "midnight"])
def test_a_night_word_past_midnight_is_refused_as_the_next_day(words):
    with pytest.raises(ValueError, match="falls on the next day"):
        parse_time(words)


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        ("上午15点", "morning with an afternoon hour"),
        ("下午0点", "does not fit"),
        ("中午5点", "does not fit"),
        ("凌晨8点", "does not fit"),
        ("三点五", "unclear"),  # 03:05 or 03:50?
        ("3点5", "unclear"),
        ("25:00", "not a valid time"),
        ("12:60", "not a valid time"),
        ("13pm", "not a valid 12-hour"),
        ("0am", "not a valid 12-hour"),
        ("noonish", "Cannot read"),
        ("", "Cannot read"),
        ("7:5", "Cannot read"),
        ("下午", "Cannot read"),
        ("三五点", "Cannot read the number"),
    ],
)
def test_impossible_or_unclear_times_are_refused_with_the_reason(words, reason):
    with pytest.raises(ValueError, match=reason):
        parse_time(words)


@pytest.mark.parametrize(
    ("words", "vague"),
    [
        ("3点", True),  # 03:00 or 15:00?
        ("三點", True),
        ("3", True),
        ("两点一刻", True),
        ("下午3点", False),
        ("凌晨3点", False),
        ("3am", False),
        ("03:00", False),
        ("9点", False),
        ("0点", False),
    ],
)
def test_a_bare_small_hour_is_vague(words, vague):
    assert read_clock(words).vague is vague


def test_words_that_name_the_day_say_which():
    assert read_clock("明晚8点").day == 1
    assert read_clock("明早8點").day == 1
    assert read_clock("今晚7点").day == 0
    assert read_clock("晚上7点").day is None


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("明天下午3点开会", "下午3点"),
        ("明天下午三點半開會", "下午三點半"),
        ("明晚8点吃饭", "明晚8点"),
        ("两点一刻出发", "两点一刻"),
        ("十一点开会", "十一点"),
        ("一点钟开会", "一点钟"),
        ("下午一点", "下午一点"),
        ("add dentist tomorrow at 2:30 pm", "2:30 pm"),
        ("meet at 3 p.m. today", "3 p.m."),
        ("call at 3 in the afternoon", "3 in the afternoon"),
        ("meeting tomorrow 15:00", "15:00"),
        ("lunch at noon", "noon"),
        ("买一点水果", None),  # "a little", not 01:00
        ("快一点", None),
        ("等一时半会", None),
        ("afternoon tea", None),
        ("开会两小时", None),
    ],
)
def test_time_words_are_found_in_a_message(text, found):
    match = TIME_WORDS.search(text)
    assert (match.group("time") if match else None) == found
