"""When schedules come due: time zones, both DST changes, month days, the last slot."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reminders.schedule_words import CronSpec, parse_schedule
from reminders.slots import last_slot, next_slot, slot_key

MONDAY_9 = CronSpec(minute="0", hour="9", day_of_week="1")


def test_the_next_monday_at_nine_in_taipei() -> None:
    friday_noon_utc = datetime(2026, 11, 27, 4, 0, tzinfo=UTC)
    slot = next_slot(MONDAY_9, "Asia/Taipei", friday_noon_utc)
    assert slot.isoformat() == "2026-11-30T09:00:00+08:00"
    assert slot_key(slot) == "2026-11-30T09:00"


def test_next_is_strictly_after_and_last_includes_the_instant() -> None:
    at = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)  # 09:00 in Taipei, a Monday
    assert next_slot(MONDAY_9, "Asia/Taipei", at).isoformat() == "2026-12-07T09:00:00+08:00"
    assert last_slot(MONDAY_9, "Asia/Taipei", at).isoformat() == "2026-11-30T09:00:00+08:00"


def test_the_same_words_in_two_zones_are_two_instants() -> None:
    after = datetime(2026, 11, 27, tzinfo=UTC)
    taipei = next_slot(MONDAY_9, "Asia/Taipei", after)
    london = next_slot(MONDAY_9, "Europe/London", after)
    assert (london - taipei).total_seconds() == 8 * 3600


def test_a_time_skipped_by_spring_forward_comes_due_once_after_the_gap() -> None:
    daily_0230 = CronSpec(minute="30", hour="2")
    slot = next_slot(daily_0230, "America/New_York", datetime(2026, 3, 7, 12, tzinfo=UTC))
    assert slot.isoformat() == "2026-03-08T03:00:00-04:00"
    following = next_slot(daily_0230, "America/New_York", slot)
    assert following.isoformat() == "2026-03-09T02:30:00-04:00"


def test_a_time_repeated_by_fall_back_comes_due_once() -> None:
    daily_0130 = CronSpec(minute="30", hour="1")
    first = next_slot(daily_0130, "America/New_York", datetime(2026, 10, 31, 16, tzinfo=UTC))
    assert first.isoformat() == "2026-11-01T01:30:00-04:00"
    assert next_slot(daily_0130, "America/New_York", first).isoformat() == (
        "2026-11-02T01:30:00-05:00"
    )
    an_hour_later = datetime(2026, 11, 1, 6, 45, tzinfo=UTC)  # 01:45 the second time round
    assert last_slot(daily_0130, "America/New_York", an_hour_later) == first


@pytest.mark.parametrize(
    ("words", "after", "expected"),
    [
        ("每月1号 10:00", datetime(2026, 11, 27, tzinfo=UTC), "2026-12-01T10:00:00+08:00"),
        ("weekdays at 08:30", datetime(2026, 11, 27, 1, tzinfo=UTC), "2026-11-30T08:30:00+08:00"),
        ("每天早上9點", datetime(2026, 11, 27, 2, tzinfo=UTC), "2026-11-28T09:00:00+08:00"),
    ],
)
def test_schedules_read_from_words(words: str, after: datetime, expected: str) -> None:
    assert next_slot(parse_schedule(words), "Asia/Taipei", after).isoformat() == expected


def test_a_schedule_that_never_came_due_in_a_year_has_no_last_slot() -> None:
    feb_30 = CronSpec(minute="0", hour="9", day_of_month="30", month_of_year="2")
    with pytest.raises(ValueError, match="never comes due"):
        next_slot(feb_30, "UTC", datetime(2026, 1, 1, tzinfo=UTC))
    april_31 = CronSpec("0", "9", day_of_month="31", month_of_year="4")
    assert last_slot(april_31, "UTC", datetime(2026, 6, 1, tzinfo=UTC)) is None
