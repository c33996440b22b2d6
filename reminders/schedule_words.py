"""Schedules in plain words, English or Chinese (either script), to crontab fields and back:
"every Monday at 9", "每週一 09:00", "weekdays 08:30", "每天早上8点", "每月1号 10:00", or a
crontab expression ("0 9 * * 1")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time

from celery.schedules import crontab as celery_crontab
from django.utils.dates import WEEKDAYS
from django.utils.translation import gettext as _

from config.text import joined, simplified
from reminders.time_words import TIME_WORDS, read_clock

# Crontab's day-of-week numbers: 0 is Sunday.
_EN_DAYS = {
    "sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5,
    "saturday": 6, "sun": 0, "mon": 1, "tue": 2, "tues": 2, "wed": 3, "thu": 4, "thur": 4,
    "thurs": 4, "fri": 5, "sat": 6,
}  # fmt: skip
_CN_DAYS = {"日": 0, "天": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_EVERY_DAY = re.compile(r"\b(?:every ?day|daily|each day)\b|每天|每日|天天")
_WEEKDAYS = re.compile(r"\b(?:every )?week ?days?\b|工作日|平日|周一至周五|周一到周五")
_WEEKENDS = re.compile(r"\b(?:every )?weekends?\b|周末")
_EN_NAMED = re.compile(r"\b(" + "|".join(sorted(_EN_DAYS, key=len, reverse=True)) + r")s?\b")
_CN_NAMED = re.compile(r"(?:周|星期|礼拜)([一二三四五六日天](?:[、,，和及与]?[一二三四五六日天])*)")
_MONTH_DAY = re.compile(
    r"\bon the (\d{1,2})(?:st|nd|rd|th)?\b|\bday (\d{1,2}) of (?:every|each) month\b"
    r"|每月(\d{1,2})[日号]|每个月(\d{1,2})[日号]"
)
_CRONTAB = re.compile(r"^\s*\S+\s+\S+\s+\S+\s+\S+\s+\S+\s*$")
# The time a part of the day stands for when the words name no clock time ("every Monday
# morning", "每週一早上"); with no part of the day either, the first one's.
PART_OF_DAY_TIMES = {"morning": time(9), "afternoon": time(14), "evening": time(19)}
_PARTS = (
    ("morning", re.compile(r"\bmornings?\b|早上|上午|早晨|清晨|一早")),
    ("afternoon", re.compile(r"\bafternoons?\b|下午|午后")),
    ("evening", re.compile(r"\bevenings?\b|\bnights?\b|晚上|傍晚|每晚")),
)


class MissingTime(ValueError):
    """The words say which days but no time of day."""


@dataclass(frozen=True)
class CronSpec:
    """The crontab fields of a schedule (celery's: day_of_week 0 = Sunday)."""

    minute: str
    hour: str
    day_of_week: str = "*"
    day_of_month: str = "*"
    month_of_year: str = "*"


def parse_schedule(words: str) -> CronSpec:
    """The crontab fields the words say; raises ValueError with a plain reason (what to
    write instead) when they cannot be read or say no time."""
    text = " ".join(simplified(str(words)).strip().lower().split())
    if not text:
        raise ValueError(_("Write when it runs, e.g. “every Monday at 09:00” or “每週一 09:00”."))
    if _CRONTAB.match(text) and not re.search(r"[a-z\u4e00-\u9fff]{3,}", text.split()[-1]):
        return _crontab(text)
    at = _time_of(text)
    days = _days_of(text)
    return CronSpec(minute=str(at.minute), hour=str(at.hour), **days)


@dataclass(frozen=True)
class ScheduleReading:
    """A schedule read from words, and the time assumed when they named none (else None)."""

    spec: CronSpec
    assumed: time | None = None


def read_schedule(words: str) -> ScheduleReading:
    """Like parse_schedule, but words without a clock time run at their part of the day's time
    ("every Monday morning" at 09:00, "每月1號" at 09:00), which the reading says it assumed."""
    try:
        return ScheduleReading(parse_schedule(words))
    except MissingTime:
        text = " ".join(simplified(str(words)).strip().lower().split())
        part = next((name for name, said in _PARTS if said.search(text)), "morning")
        at = PART_OF_DAY_TIMES[part]
        days = _days_of(text)
        return ScheduleReading(CronSpec(minute=str(at.minute), hour=str(at.hour), **days), at)


def _crontab(text: str) -> CronSpec:
    minute, hour, day_of_month, month_of_year, day_of_week = text.split()
    try:
        celery_crontab(minute, hour, day_of_week, day_of_month, month_of_year)
    except (ValueError, IndexError) as exc:
        raise ValueError(
            _(
                "“%(text)s” is not a valid crontab expression (minute hour day month weekday): "
                "%(problem)s"
            )
            % {"text": text, "problem": exc}
        ) from exc
    return CronSpec(minute, hour, day_of_week, day_of_month, month_of_year)


def _time_of(text: str) -> time:
    found = TIME_WORDS.search(text) or re.search(r"(?<![\d:])(\d{1,2}:\d{2})(?![\d:])", text)
    if found is None:
        raise MissingTime(
            _("No time of day in “%(text)s”; add one, e.g. “at 09:00” or “上午9点”.")
            % {"text": text}
        )
    said = found.group("time") if "time" in found.re.groupindex else found.group(1)
    try:
        clock = read_clock(said)
    except ValueError as exc:
        raise ValueError(str(exc)) from exc
    if clock.vague:
        raise ValueError(
            _("“%(time)s” could be %(first)s or %(second)s; write it as HH:MM (24-hour).")
            % {
                "time": said,
                "first": f"{clock.at:%H:%M}",
                "second": f"{clock.at.replace(hour=clock.at.hour + 12):%H:%M}",
            }
        )
    if clock.day:
        raise ValueError(_("“%(time)s” names a day; say which days it repeats.") % {"time": said})
    return clock.at


def _days_of(text: str) -> dict[str, str]:
    if match := _MONTH_DAY.search(text):
        day = int(next(g for g in match.groups() if g))
        if not 1 <= day <= 31:
            raise ValueError(_("A month has days 1 to 31, not %(day)s.") % {"day": day})
        return {"day_of_month": str(day)}
    if _WEEKDAYS.search(text):
        return {"day_of_week": "1-5"}
    if _WEEKENDS.search(text):
        return {"day_of_week": "0,6"}
    named = {_EN_DAYS[m] for m in _EN_NAMED.findall(text)}
    for group in _CN_NAMED.findall(text):
        named |= {_CN_DAYS[c] for c in group if c in _CN_DAYS}
    if named:
        return {"day_of_week": ",".join(str(d) for d in sorted(named))}
    if _EVERY_DAY.search(text):
        return {}
    raise ValueError(
        _(
            "Say which days: “every day”, “weekdays”, “every Monday”, “每週一”, “每月1日”, or "
            "write a crontab expression such as “0 9 * * 1”."
        )
    )


def describe_schedule(spec: CronSpec, zone: str = "") -> str:
    """The schedule in words, in the active language ("every Monday at 09:00 (Asia/Taipei)");
    a crontab that no words fit is shown as its expression."""
    words = _words(spec)
    return f"{words} ({zone})" if zone else words


def _words(spec: CronSpec) -> str:
    expression = " ".join(
        [spec.minute, spec.hour, spec.day_of_month, spec.month_of_year, spec.day_of_week]
    )
    if not (spec.minute.isdigit() and spec.hour.isdigit()) or spec.month_of_year != "*":
        return _("crontab “%(expression)s”") % {"expression": expression}
    at = f"{int(spec.hour):02d}:{int(spec.minute):02d}"
    dow, dom = spec.day_of_week, spec.day_of_month
    if dom != "*":
        if dom.isdigit() and dow == "*":
            return _("on day %(day)s of every month at %(time)s") % {"day": dom, "time": at}
        return _("crontab “%(expression)s”") % {"expression": expression}
    if dow == "*":
        return _("every day at %(time)s") % {"time": at}
    if dow == "1-5":
        return _("weekdays at %(time)s") % {"time": at}
    if dow in ("0,6", "6,0"):
        return _("weekends at %(time)s") % {"time": at}
    days = dow.split(",")
    if all(d.isdigit() and int(d) <= 7 for d in days):
        names = [str(WEEKDAYS[(int(d) - 1) % 7]) for d in days]  # WEEKDAYS: 0 is Monday
        return _("every %(days)s at %(time)s") % {"days": joined(names), "time": at}
    return _("crontab “%(expression)s”") % {"expression": expression}
