"""The remind-time rules in the user's timezone, including DST changes and far-apart users."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from reminders.remind_time import remind_at_for

TAIPEI = ZoneInfo("Asia/Taipei")
NEW_YORK = ZoneInfo("America/New_York")
WEDNESDAY_10 = datetime(2025, 6, 11, 10, 0, tzinfo=TAIPEI)


def rule(day, start=None, segment="", zone=TAIPEI, now=WEDNESDAY_10):
    return remind_at_for(day=day, start=start, segment=segment, zone=zone, now=now)


def test_a_later_day_is_reminded_at_20_the_day_before():
    decided = rule(date(2025, 6, 14), segment="morning")
    assert decided.at == datetime(2025, 6, 13, 20, 0, tzinfo=TAIPEI)
    assert decided.rule == "20:00 the day before"
    assert rule(date(2025, 6, 12), start=time(7)).at == datetime(2025, 6, 11, 20, tzinfo=TAIPEI)


def test_today_with_a_time_is_reminded_two_hours_before():
    decided = rule(date(2025, 6, 11), start=time(15, 30))
    assert decided.at == datetime(2025, 6, 11, 13, 30, tzinfo=TAIPEI)
    assert decided.rule == "two hours before"


def test_today_in_a_segment_counts_the_segments_start_as_its_time():
    assert rule(date(2025, 6, 11), segment="evening").at == datetime(
        2025, 6, 11, 16, 0, tzinfo=TAIPEI
    )


def test_today_without_a_time_is_reminded_at_8():
    early = datetime(2025, 6, 11, 6, 0, tzinfo=TAIPEI)
    decided = rule(date(2025, 6, 11), now=early)
    assert decided.at == datetime(2025, 6, 11, 8, 0, tzinfo=TAIPEI)
    assert decided.rule == "08:00 on the day"


def test_a_task_on_a_past_day_is_refused():
    decided = rule(date(2025, 6, 10))
    assert decided.at is None and "has passed" in decided.refusal


def test_a_task_time_already_past_today_is_refused():
    decided = rule(date(2025, 6, 11), start=time(9, 0))
    assert decided.at is None and "09:00 today" in decided.refusal


def test_a_reminder_time_already_past_is_refused_with_the_reason():
    # 11:00 today is still ahead, but two hours before it (09:00) is not.
    decided = rule(date(2025, 6, 11), start=time(11, 0))
    assert decided.at is None and "two hours before" in decided.refusal
    # 08:00 today is past at 10:00.
    assert "08:00 on the day" in rule(date(2025, 6, 11)).refusal
    # Tomorrow's task, asked at 21:00: 20:00 the day before is over.
    late = datetime(2025, 6, 11, 21, 0, tzinfo=TAIPEI)
    decided = rule(date(2025, 6, 12), now=late)
    assert decided.at is None and "20:00 the day before" in decided.refusal


def test_the_boundary_exactly_now_is_refused_and_a_minute_later_is_not():
    exactly = rule(date(2025, 6, 11), start=time(12, 0))  # 10:00 == now
    assert exactly.at is None
    assert rule(date(2025, 6, 11), start=time(12, 1)).at == datetime(
        2025, 6, 11, 10, 1, tzinfo=TAIPEI
    )


def test_two_hours_before_is_elapsed_time_across_spring_forward():
    # 2025-03-09 in New York jumps from 02:00 EST to 03:00 EDT.
    now = datetime(2025, 3, 9, 0, 0, tzinfo=NEW_YORK)
    decided = rule(date(2025, 3, 9), start=time(3, 30), zone=NEW_YORK, now=now)
    begins = datetime(2025, 3, 9, 3, 30, tzinfo=NEW_YORK)
    assert begins.astimezone(UTC) - decided.at.astimezone(UTC) == timedelta(hours=2)
    assert (decided.at.hour, decided.at.minute) == (0, 30)  # 00:30 EST on the wall clock


def test_two_hours_before_is_elapsed_time_across_fall_back():
    # 2025-11-02 in New York falls back from 02:00 EDT to 01:00 EST.
    now = datetime(2025, 11, 2, 0, 0, tzinfo=NEW_YORK)
    decided = rule(date(2025, 11, 2), start=time(3, 0), zone=NEW_YORK, now=now)
    # 03:00 EST is 08:00 UTC; two hours earlier is the second 01:00 of the night (EST).
    assert decided.at.astimezone(UTC) == datetime(2025, 11, 2, 6, 0, tzinfo=UTC)
    assert (decided.at.hour, decided.at.fold, decided.at.utcoffset()) == (1, 1, timedelta(hours=-5))


def test_the_evening_before_a_dst_change_is_20_local_on_each_side():
    before_spring = rule(
        date(2025, 3, 10), zone=NEW_YORK, now=datetime(2025, 3, 8, 12, tzinfo=NEW_YORK)
    )
    assert before_spring.at.astimezone(UTC) == datetime(2025, 3, 10, 0, 0, tzinfo=UTC)  # EDT
    before_fall = rule(
        date(2025, 11, 3), zone=NEW_YORK, now=datetime(2025, 11, 1, 12, tzinfo=NEW_YORK)
    )
    assert before_fall.at.astimezone(UTC) == datetime(2025, 11, 3, 1, 0, tzinfo=UTC)  # EST


def test_a_task_in_the_spring_forward_gap_is_reminded_two_hours_before_its_real_start():
    now = datetime(2025, 3, 9, 0, 0, tzinfo=NEW_YORK)
    decided = rule(date(2025, 3, 9), start=time(2, 30), zone=NEW_YORK, now=now)
    # 02:30 does not exist: the task starts 03:30 EDT (07:30 UTC); two hours before is 05:30 UTC.
    assert decided.at.astimezone(UTC) == datetime(2025, 3, 9, 5, 30, tzinfo=UTC)


def test_users_in_different_timezones_get_their_own_today_and_evening():
    now = datetime(2025, 6, 13, 16, 0, tzinfo=UTC)  # Saturday 01:00 in Tokyo, Friday 09:00 in LA
    tokyo, los_angeles = ZoneInfo("Asia/Tokyo"), ZoneInfo("America/Los_Angeles")
    saturday = date(2025, 6, 14)
    in_tokyo = rule(saturday, zone=tokyo, now=now)
    assert in_tokyo.rule == "08:00 on the day"  # Saturday is today in Tokyo
    assert in_tokyo.at == datetime(2025, 6, 14, 8, 0, tzinfo=tokyo)
    in_la = rule(saturday, zone=los_angeles, now=now)
    assert in_la.rule == "20:00 the day before"
    assert in_la.at == datetime(2025, 6, 13, 20, 0, tzinfo=los_angeles)
    assert in_la.at.astimezone(UTC) - in_tokyo.at.astimezone(UTC) == timedelta(hours=4)
