"""Time helpers: dates and times as people say them, day segments, and DST-safe local instants."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import pgettext, pgettext_lazy

from config.text import simplified

# Day segments: a task "Saturday morning" occupies this window of its day.
SEGMENTS: dict[str, tuple[time, time]] = {
    "morning": (time(8), time(12)),
    "afternoon": (time(13), time(18)),
    "evening": (time(18), time(22)),
}
# How each segment reads in a sentence, in the active language.
SEGMENT_NAMES = {
    "morning": pgettext_lazy("part of the day", "morning"),
    "afternoon": pgettext_lazy("part of the day", "afternoon"),
    "evening": pgettext_lazy("part of the day", "evening"),
}
SEGMENT_WORDS: dict[str, str] = {
    "morning": "morning",
    "afternoon": "afternoon",
    "evening": "evening",
    "tonight": "evening",
    "night": "evening",
    "早上": "morning",
    "上午": "morning",
    "早晨": "morning",
    "下午": "afternoon",
    "中午": "afternoon",
    "晚上": "evening",
    "傍晚": "evening",
    "今晚": "evening",
}

_WEEKDAYS = {
    **{name: i for i, name in enumerate(["monday", "tuesday", "wednesday", "thursday"])},
    **{name: i + 4 for i, name in enumerate(["friday", "saturday", "sunday"])},
    **{name: i for i, name in enumerate(["mon", "tue", "wed", "thu", "fri", "sat", "sun"])},
    "tues": 1,
    "thur": 3,
    "thurs": 3,
}
_CN_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_RELATIVE = {
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
    "day after tomorrow": 2,
    "yesterday": -1,
    "今天": 0,
    "今晚": 0,
    "明天": 1,
    "后天": 2,
    "大后天": 3,
    "昨天": -1,
    "今早": 0,
    "明早": 1,
    "明晚": 1,
}
_CN_WEEKDAY = re.compile(r"^(下个|这个|下|这|本)?(?:周|星期|礼拜)([一二三四五六日天])$")
_CN_WEEKEND = re.compile(r"^(下个|这个|下|这|本)?周末$")
_EN_WEEKDAY = re.compile(r"^(this |next |coming )?([a-z]+)$")


def parse_date(text: str, today: date) -> date:
    """A date from ISO (2025-06-14), a relative word (today, tomorrow, 明天, 明早) or a weekday
    (saturday/周六 = the coming one, today included; "next saturday"/"下周六" = next week's;
    "这周六" = this calendar week's, even if past), or "weekend"/"周末" (its Saturday); either
    Chinese script. Raises ValueError with a reason."""
    return date_readings(text, today)[0]


def date_readings(text: str, today: date) -> list[date]:
    """The dates the words can mean: the one parse_date takes first, then another when people
    differ ("next saturday" said on a Wednesday: next week's, or this coming one)."""
    words = " ".join(simplified(str(text)).strip().lower().split())
    if not words:
        raise ValueError(_("The date is empty."))
    try:
        return [date.fromisoformat(words.replace("/", "-"))]
    except ValueError:
        pass
    if words in _RELATIVE:
        return [today + timedelta(days=_RELATIVE[words])]
    if words in ("weekend", "this weekend", "the weekend", "next weekend"):
        return _english_weekday(today, 5, words.startswith("next"), weekend=True)
    if match := _CN_WEEKEND.match(words):
        next_week = (match.group(1) or "").startswith("下")
        return [_weekday(today, 5, next_week=next_week, weekend=True)]
    if match := _CN_WEEKDAY.match(words):
        prefix, weekday = match.group(1) or "", _CN_DAYS[match.group(2)]
        if prefix in ("这", "本", "这个"):  # this calendar week (Mon–Sun), past or not
            return [today + timedelta(days=weekday - today.weekday())]
        return [_weekday(today, weekday, next_week=prefix.startswith("下"))]
    if (match := _EN_WEEKDAY.match(words)) and match.group(2) in _WEEKDAYS:
        return _english_weekday(today, _WEEKDAYS[match.group(2)], match.group(1) == "next ")
    raise ValueError(
        _("Cannot read the date %(text)s; use YYYY-MM-DD, today, tomorrow or a weekday name.")
        % {"text": repr(text)}
    )


def _english_weekday(today: date, weekday: int, said_next: bool, weekend: bool = False) -> list:
    """ "next <day>" is next week's, but when that day is still to come this week many mean
    the coming one: both readings, next week's first."""
    coming = _weekday(today, weekday, next_week=False, weekend=weekend)
    if not said_next:
        return [coming]
    later = _weekday(today, weekday, next_week=True, weekend=weekend)
    return [later] if coming.weekday() <= today.weekday() else [later, coming]


def _weekday(today: date, weekday: int, *, next_week: bool, weekend: bool = False) -> date:
    """The coming `weekday` (today counts), or that day in next calendar week (Mon–Sun)."""
    if next_week:
        return today + timedelta(days=7 - today.weekday() + weekday)
    if weekend and today.weekday() == 6:  # on Sunday "this weekend" is today
        return today
    return today + timedelta(days=(weekday - today.weekday()) % 7)


def local_datetime(day: date, at: time, zone: ZoneInfo) -> datetime:
    """The instant of wall-clock `at` on `day` in `zone`. A time that does not exist (the
    spring-forward gap) moves forward by the gap; an ambiguous one (fall-back) is the first."""
    aware = datetime.combine(day, at).replace(tzinfo=zone, fold=0)
    return aware.astimezone(UTC).astimezone(zone)


@dataclass(frozen=True)
class Window:
    """A task's span as UTC instants (so arithmetic is elapsed time, even across DST);
    `exact` is False for a day segment (a vague span)."""

    start: datetime
    end: datetime
    exact: bool = True

    def overlaps(self, other: Window) -> bool:
        """Whether the spans share time; touching ends (10:00–11:00, 11:00–12:00) do not."""
        return self.start < other.end and other.start < self.end


def task_window(
    *,
    day: date,
    start: time | None,
    end: time | None,
    segment: str,
    zone: ZoneInfo,
    default_minutes: int,
) -> Window | None:
    """The span a task occupies: exact times (a start alone lasts `default_minutes`), else its
    segment's window, else None (any time that day)."""
    if start is not None:
        begins = local_datetime(day, start, zone).astimezone(UTC)
        ends = (
            local_datetime(day, end, zone).astimezone(UTC)
            if end is not None
            else begins + timedelta(minutes=default_minutes)
        )
        return Window(begins, ends)
    if segment:
        first, last = (local_datetime(day, at, zone).astimezone(UTC) for at in SEGMENTS[segment])
        return Window(first, last, False)
    return None


def describe_window(*, start: time | None, end: time | None, segment: str) -> str:
    """How a task's time reads to people, in the active language: "09:00–10:00", "09:00",
    "morning (08:00–12:00)", "any time"."""
    if start is not None:
        return f"{start:%H:%M}–{end:%H:%M}" if end is not None else f"{start:%H:%M}"
    if segment:
        first, last = SEGMENTS[segment]
        return _("%(segment)s (%(start)s–%(end)s)") % {
            "segment": segment_name(segment),
            "start": f"{first:%H:%M}",
            "end": f"{last:%H:%M}",
        }
    return _("any time")


def segment_name(segment: str) -> str:
    """A day segment's name in the active language ("morning", 上午)."""
    return str(SEGMENT_NAMES.get(segment, segment))


def day_long(day: date) -> str:
    """A date with weekday and year in the active language: "Saturday 28 November 2026"."""
    return date_format(day, pgettext("date format: weekday, day, month, year", "l d F Y"))


def day_short(day: date) -> str:
    """A date with weekday, without the year, in the active language: "Saturday 28 November"."""
    return date_format(day, pgettext("date format: weekday, day, month", "l d F"))


def weekday_iso(day: date) -> str:
    """A date as its weekday and ISO date in the active language: "Saturday 2026-11-28"."""
    return date_format(day, pgettext("date format: weekday, ISO date", "l Y-m-d"))


def day_short_time(moment: datetime) -> str:
    """A wall-clock instant with weekday, date and time: "Saturday 28 November 20:00"."""
    return date_format(moment, pgettext("date format: weekday, day, month, time", "l d F H:i"))


def day_brief(day: date) -> str:
    """A date in short, with its weekday, in the active language: "Sat 28 Nov"."""
    return date_format(day, pgettext("date format: short weekday, day, short month", "D j M"))


def when_said(moment: datetime, today: date) -> str:
    """A wall-clock instant as people say when something will happen, against the user's
    `today`: "tomorrow (Sat 28 Nov) at 09:00", "today (Fri 27 Nov) at 20:00", "Mon 30 Nov at
    08:00"."""
    values = {"day": day_brief(moment.date()), "time": f"{moment:%H:%M}"}
    offset = (moment.date() - today).days
    if offset == 0:
        return _("today (%(day)s) at %(time)s") % values
    if offset == 1:
        return _("tomorrow (%(day)s) at %(time)s") % values
    return _("%(day)s at %(time)s") % values


def weekday_time(moment: datetime) -> str:
    """A wall-clock instant as its weekday and time in the active language: "Saturday 20:00"."""
    return date_format(moment, pgettext("date format: weekday, time", "l H:i"))
