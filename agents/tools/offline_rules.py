"""How the offline model reads the built-in tools' arguments from plain words (EN and ZH)."""

from __future__ import annotations

import re
from typing import Any

ARITHMETIC = re.compile(r"[-+(]*\d[\d.\s]*(?:[-+*/^%×÷]\s*[-+(]*\d[\d.\s)]*)+")
_TIME_WORDS = re.compile(
    r"\b(time|date|today|weekday|what day)\b|几点|时间|日期|今天|星期|幾點|時間", re.IGNORECASE
)


def time_args(text: str) -> dict[str, Any] | None:
    """Ask for the time on any mention of time, date or today."""
    return {} if _TIME_WORDS.search(text) else None


def calculate_args(text: str) -> dict[str, Any] | None:
    """The first arithmetic expression in the text, with × and ÷ as * and /."""
    match = ARITHMETIC.search(text)
    if not match:
        return None
    expression = match.group(0).replace("×", "*").replace("÷", "/").strip()
    return {"expression": expression}


# A URL as people paste it: up to a space, a quote or a bracket; closing punctuation is not part.
_URL = re.compile(r"https?://[^\s<>\"'()\[\]{}（）「」《》]+", re.IGNORECASE)
_URL_TAIL = ".,;:!?。，；：！？、"


def url_args(text: str) -> dict[str, Any] | None:
    """The first http(s) URL in the text (a URL in the user's words: read that page)."""
    match = _URL.search(text)
    if not match:
        return None
    url = match.group(0).rstrip(_URL_TAIL)
    return {"url": url} if url.partition("://")[2] else None
