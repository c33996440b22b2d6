"""Times of day as people say them, in English and Chinese (both scripts): 15:00, 3pm, 3 p.m.,
下午3点, 三點半, 两点一刻, with the words that say which half of the day is meant."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import time

from django.utils.translation import gettext as _

from config.text import simplified

# What a word beside the hour says about it. Chinese words stand before the hour; English
# ones after it. Read in Simplified script (午後 -> 午后, 夜裡 -> 夜里).
MARKERS: dict[str, str] = {
    **dict.fromkeys(["上午", "早上", "早晨", "清晨", "明早", "今早", "am", "a.m."], "morning"),
    **dict.fromkeys(["in the morning"], "morning"),
    "凌晨": "small hours",
    "中午": "noon",
    **dict.fromkeys(["下午", "午后", "傍晚", "pm", "p.m.", "in the afternoon"], "afternoon"),
    **dict.fromkeys(["晚上", "今晚", "明晚", "夜里", "夜间", "晚间", "in the evening"], "night"),
    **dict.fromkeys(["tonight", "at night"], "night"),
}
# Words that also name the day: the time belongs to today (0) or tomorrow (1).
DAY_OF_MARKER = {"今早": 0, "今晚": 0, "tonight": 0, "明早": 1, "明晚": 1}
_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4}
_CN_DIGITS |= {"五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUMBER = r"\d{1,2}|[零〇一二两三四五六七八九十]{1,3}"
_CLOCK = re.compile(
    rf"^(?P<hour>{_NUMBER})(?:[:.h](?P<mm>\d{{2}})?"
    rf"|[点时]钟?(?:(?P<half>半)|(?P<quarter>[一三])刻|(?P<minute>{_NUMBER})(?P<fen>分钟?|分)?)?)?$"
)
_PREFIX = re.compile("^(" + "|".join(w for w in MARKERS if not w.isascii()) + ")")
_SUFFIX = re.compile(
    "("
    + "|".join(re.escape(w) for w in sorted(MARKERS, key=len, reverse=True) if w.isascii())
    + ")$"
)

# A time inside free text (for rules that read messages), in either script. A bare 一点/一时
# ("a little", "for a moment", 一时半会) is not read as 01:00.
_CN_MARK = "|".join(
    sorted({*(w for w in MARKERS if not w.isascii()), "午後", "夜裡", "夜間", "晚間"}, key=len)[
        ::-1
    ]
)
_CN_NUMBER = r"[零〇一二两兩三四五六七八九十]{1,3}"
_CN_AFTER = r"(?:半|[一三]刻|\d{1,2}分?|" + _CN_NUMBER + r"分?)"
TIME_WORDS = re.compile(
    r"(?:\bat\s+)?(?P<time>"
    rf"(?:(?:{_CN_MARK})\s*|(?!一[点點时時](?![钟鐘半刻零〇一二两兩三四五六七八九十\d])|一[时時]半[会會]))"
    rf"(?:\d{{1,2}}|{_CN_NUMBER})\s*[点點时時](?:钟|鐘)?{_CN_AFTER}?"
    rf"|(?:{_CN_MARK})\s*\d{{1,2}}[:：]\d{{2}}"
    r"|\b\d{1,2}(?::\d{2})?\s*(?:a\.m\.|p\.m\.|am|pm)(?![a-z])"
    r"|\b\d{1,2}(?::\d{2})?\s+(?:in the (?:morning|afternoon|evening)|tonight|at night)\b"
    r"|\b\d{1,2}:\d{2}\b|\bnoon\b|\bmidday\b|\bmidnight\b"
    r"|(?<=\bat )\d{1,2}\b(?![:.,]?\d))",  # "at 9": the tool reads it, asks back for 1-5
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Clock:
    """A time of day read from words; `vague` when a bare small hour ("3点", "3") could as
    well be the afternoon's; `day` when the words also name the day (明晚: 1, tomorrow)."""

    at: time
    vague: bool = False
    day: int | None = None


def read_clock(text: str) -> Clock:
    """Read a time of day. Afternoon and evening words shift the hour (下午3点 = 15:00,
    中午12点 = 12:00, 3 p.m. = 15:00); morning words do not (上午9点, 凌晨2点, 9am). A time
    after midnight named with an evening word (晚上12点, 夜里1点, midnight) is refused: it
    belongs to the next day, which must be given as that date with 00:00–04:59. Raises
    ValueError with the reason."""
    words = " ".join(simplified(unicodedata.normalize("NFKC", str(text))).lower().split())
    if words in ("noon", "midday"):
        return Clock(time(12))
    if words == "midnight":
        raise ValueError(_next_day(text))
    marker = ""
    if match := _PREFIX.match(words):
        marker, words = match.group(1), words[match.end() :]
    elif match := _SUFFIX.search(words):
        marker, words = match.group(1), words[: match.start()]
    match = _CLOCK.match(words.replace(" ", ""))
    if not match or not words:
        raise ValueError(
            _("Cannot read the time %(text)s; use HH:MM (24-hour), e.g. 14:30, or 3pm, 下午3点.")
            % {"text": repr(text)}
        )
    hour, minute = _number(match.group("hour")), _minutes(match, text)
    if minute > 59:
        raise ValueError(_("%(text)s is not a valid time of day.") % {"text": repr(text)})
    hour = _shifted(hour, MARKERS.get(marker, ""), marker, text)
    vague = not marker and 1 <= hour <= 5 and match.group("mm") is None
    return Clock(time(hour, minute), vague=vague, day=DAY_OF_MARKER.get(marker))


def parse_time(text: str) -> time:
    """A time of day (see read_clock): 14:30, 9, 9am, 2:30 pm, 14点30, 下午三点半."""
    return read_clock(text).at


def _next_day(text: str) -> str:
    return _(
        "%(text)s is at or after midnight, so it falls on the next day: give that day's date "
        "with a time from 00:00 to 04:59 instead."
    ) % {"text": repr(text)}


def _shifted(hour: int, kind: str, marker: str, text: str) -> int:
    """The 24-hour hour for an hour said with a marker of `kind` (English markers take 1–12)."""
    if marker.isascii() and marker and not 1 <= hour <= 12:
        raise ValueError(_("%(text)s is not a valid 12-hour time.") % {"text": repr(text)})
    if kind == "morning":
        if marker.isascii() and hour == 12:
            return 0  # 12am is the start of the day
        if hour > 12:
            raise ValueError(
                _("%(text)s says morning with an afternoon hour.") % {"text": repr(text)}
            )
        return hour
    if kind == "small hours" and (hour <= 6 or hour == 12):
        return hour % 12
    if kind == "noon" and hour in (11, 12, 1, 2):
        return hour if hour >= 11 else hour + 12
    if kind == "afternoon" and 1 <= hour <= 23:
        return hour + 12 if hour < 12 else hour
    if kind == "night" and (5 <= hour <= 11 or 17 <= hour <= 23):
        return hour + 12 if hour < 12 else hour
    if kind == "night" and (hour <= 4 or hour in (12, 24)):
        raise ValueError(_next_day(text))
    if kind:
        raise ValueError(
            _("%(text)s does not fit its part of the day (%(marker)s).")
            % {"text": repr(text), "marker": marker}
        )
    if hour > 23:
        raise ValueError(_("%(text)s is not a valid time of day.") % {"text": repr(text)})
    return hour


def _minutes(match: re.Match[str], text: str) -> int:
    if match.group("mm"):
        return int(match.group("mm"))
    if match.group("half"):
        return 30
    if match.group("quarter"):
        return 15 if match.group("quarter") == "一" else 45
    said = match.group("minute")
    if not said:
        return 0
    minute = _number(said)
    if minute < 10 and not match.group("fen") and not said.startswith(("0", "零", "〇")):
        raise ValueError(  # 三点五 / 3点5: 03:05 or 03:50? Ask for a clear form.
            _("%(text)s is unclear: write the minutes with two digits (3点05) or with 分.")
            % {"text": repr(text)}
        )
    return minute


def _number(said: str) -> int:
    """An integer from digits or Chinese numerals up to 99 (十 = 10, 二十三 = 23, 零五 = 5)."""
    if said.isdigit():
        return int(said)
    digits = said.lstrip("零〇") or "零"
    tens, ten, ones = digits.partition("十")
    try:
        if not ten:
            if len(digits) != 1:
                raise KeyError(digits)
            return _CN_DIGITS[digits]
        if len(tens) > 1 or len(ones) > 1:
            raise KeyError(digits)
        return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)
    except KeyError:
        raise ValueError(_("Cannot read the number %(text)s.") % {"text": repr(said)}) from None
