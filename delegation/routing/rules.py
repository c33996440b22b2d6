"""Matching a message against routing rules: words (Chinese or English, either script), a
pattern, a length; and the numbers-in-the-sentence escalation to STRICT."""

from __future__ import annotations

import re
from dataclasses import dataclass

from config.text import simplified

_SPLIT = re.compile(r"[\n,，、;；]+")
_SENTENCE = re.compile(r"[^。！？!?\n.]+(?:[。！？!?\n.]|$)")
_CJK = re.compile(r"[\u3400-\u9fff]")
# A number, year or percentage: digits, 百分之/%/％, or Chinese numerals before a unit of time.
_NUMBERS = re.compile(
    r"\d|百分之|[%％]|[零一二三四五六七八九十百千两兩]+\s*(?:年|个月|個月|月|天|日|次|倍|成|季|周|週|名)"
)


# An explicit request for a person (any policy, any topic): the turn asks staff first.
_PERSON = re.compile(
    r"转人工|找人工|要人工|人工客服|人工服务|真人客服|[找要跟和与接]真人"
    r"|\b(?:talk|speak|chat)\s+(?:to|with)\s+(?:an?\s+|some\s+|the\s+)?(?:real\s+|live\s+)?"
    r"(?:person|human|someone|somebody|staff|representative|operator)\b"
    r"|\b(?:want|need)\s+(?:to\s+(?:talk|speak)\s+(?:to|with)\s+)?an?\s+(?:real\s+|live\s+)?"
    r"(?:person|human)\b"
    r"|\breal\s+person\b|\b(?:human|live)\s+agent\b|\bask\s+an?\s+(?:human|person)\b"
    r"|\bconnect\s+me\s+(?:to|with)\s+(?:an?\s+)?(?:person|human|staff)\b"
    r"|\bescalate\s+to\s+(?:an?\s+)?(?:person|human|staff)\b",
    re.IGNORECASE,
)


def person_asked(text: str) -> str | None:
    """The words asking for a person ("轉人工", "talk to a person", "I want a human"), as the
    user wrote them, or None."""
    folded = fold(text)
    found = _PERSON.search(folded)
    if found is None:
        return None
    # Where folding kept the length (nearly always), the same span is what they wrote.
    return text[found.start() : found.end()] if len(folded) == len(text) else found.group(0)


def person_question(text: str, words: str) -> str:
    """What to ask staff: the message without the request for a person when it opens with it
    ("轉人工：我的報銷單" → "我的報銷單"), else the whole message."""
    stripped = text.strip()
    if fold(stripped).startswith(fold(words)):
        rest = stripped[len(words) :].lstrip(" \t\n:：，,。.!！-—")
        if rest:
            return rest
    return stripped


@dataclass(frozen=True)
class RuleMatch:
    """Whether a rule matched, the words that did, and whether numbers escalate it."""

    matched: bool
    keywords: tuple[str, ...] = ()
    numbers_in_sentence: bool = False


def fold(text: str) -> str:
    """Lower case, Simplified script: what rules compare."""
    return simplified(text).lower()


def keywords_of(raw: str) -> list[str]:
    """A rule's keywords: one per line or comma-separated, trimmed, empty ones dropped."""
    return [k.strip() for k in _SPLIT.split(raw or "") if k.strip()]


def _hit(folded_text: str, keyword: str) -> bool:
    word = fold(keyword)
    if _CJK.search(word) or not re.match(r"\w", word[:1]):
        return word in folded_text
    # An English word matches whole, plural included ("certificate" finds "certificates").
    return re.search(rf"(?<![\w-]){re.escape(word)}(?:s|es)?(?![\w])", folded_text) is not None


def rule_match(
    text: str, *, keywords: str, pattern: str, max_chars: int | None, numbers: bool
) -> RuleMatch:
    """Match one rule against a message (any configured part that matches is enough)."""
    folded = fold(text)
    # One hit per word: 人資 and 人资 fold alike and count once.
    hits = tuple({fold(k): k for k in reversed(keywords_of(keywords)) if _hit(folded, k)}.values())[
        ::-1
    ]
    pattern_hit = bool(pattern) and re.search(pattern, text, re.IGNORECASE) is not None
    short = max_chars is not None and len(text.strip()) <= max_chars
    if not (hits or pattern_hit or short):
        return RuleMatch(False)
    escalate = numbers and _numbers_near(text, hits, pattern if pattern_hit else "")
    return RuleMatch(True, hits, escalate)


def _numbers_near(text: str, hits: tuple[str, ...], pattern: str) -> bool:
    """Whether a sentence that carries a matched word (or the pattern) also carries a number."""
    for sentence in _SENTENCE.findall(text):
        folded = fold(sentence)
        carries = any(_hit(folded, k) for k in hits) or (
            bool(pattern) and re.search(pattern, sentence, re.IGNORECASE) is not None
        )
        if carries and _NUMBERS.search(sentence):
            return True
    return False
