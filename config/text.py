"""Chinese script handling shared by every app: folding (Traditional and Simplified compare
equal) and the language a reply should be in."""

from __future__ import annotations

import functools
import re

import opencc
from django.conf import settings
from django.utils import translation


@functools.cache
def _to_simplified() -> opencc.OpenCC:
    return opencc.OpenCC("t2s")


def simplified(text: str) -> str:
    """The text in Simplified Chinese characters (買菸 -> 买烟, 三點半 -> 三点半); other scripts
    are unchanged."""
    return _to_simplified().convert(text)


@functools.cache
def _to_traditional() -> opencc.OpenCC:
    return opencc.OpenCC("s2t")


_HAN = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]{2,}")


def reply_language(text: str, preferred: str = "") -> str:
    """The language a reply to `text` should be in: mostly Chinese text (at least as many Han
    characters as Latin words) gets Chinese in its own script (characters only Traditional has:
    zh-hant; only Simplified: zh-hans; neither: the preferred Chinese, else zh-hans), Latin
    words get English, and anything else (numbers, emoji) the user's `preferred` language (their
    page's), else the site's."""
    try:
        preferred = translation.get_supported_language_variant(preferred) if preferred else ""
    except LookupError:
        preferred = ""
    han = "".join(_HAN.findall(text))
    if han and len(han) >= len(_LATIN.findall(text)):
        if simplified(han) != han:
            return "zh-hant"
        if _to_traditional().convert(han) != han:
            return "zh-hans"
        return preferred if preferred.startswith("zh") else "zh-hans"
    if _LATIN.search(text) or han:
        return "en"
    return preferred or settings.LANGUAGE_CODE


# Chinese punctuation that ends a sentence: the next one follows without a space.
_WIDE_STOPS = tuple("。！？；：）」』”")


def sentences(*parts: str) -> str:
    """Sentences (any may be empty) as one text: after an English stop a space, after a
    Chinese one (。, ）) none, as each language writes it."""
    text = ""
    for part in filter(None, parts):
        text += part if not text or text.endswith(_WIDE_STOPS) else f" {part}"
    return text


def in_script(text: str, language: str) -> str:
    """Platform-made `text` in the script of `language`: Simplified characters become
    Traditional for zh-hant, Traditional become Simplified for zh-hans; other languages keep it."""
    language = (language or "").lower()
    if language.startswith("zh-hant") or language in ("zh-tw", "zh-hk"):
        return _to_traditional().convert(text)
    if language.startswith("zh"):
        return simplified(text)
    return text


def joined(items: list[str], language: str | None = None) -> str:
    """Items as one list in the words of `language` (default: the active one): 甲、乙、丙 in
    Chinese; "a, b and c" in English."""
    items = [str(item) for item in items if str(item)]
    language = (language or translation.get_language() or settings.LANGUAGE_CODE).lower()
    if language.startswith("zh"):
        return "、".join(items)
    if len(items) <= 2:
        return " and ".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
