"""Searching stored text with 繁/简 folded: a pattern that matches every script variant of a
query, in SQL (SQLite and Postgres regular expressions) and in Python alike.

Knowledge search folds at write time into an indexed column; chat text is written by many
paths (streaming, edits, reviews) and searched rarely, one user's chats at a time, so the query
carries the folding instead: each Chinese character becomes the class of characters that fold
to the same Simplified one (请 → [请請], 发 → [发發髮]). Matching is then "contains, with 繁/简
and case folded", as `config.text.simplified(...).lower()` would compare character by character.
"""

from __future__ import annotations

import functools
import re

from django.db.models import Q

from config.text import simplified

# The CJK blocks opencc converts (unified ideographs with extension A and B, compatibility
# ideographs); a class is built only for characters that have a variant.
_BLOCKS = ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xF900, 0xFB00), (0x20000, 0x2A6E0))
# ASCII punctuation is written as a \u escape: SQL dialects and Python read it alike.
_ASCII_SPECIAL = re.compile(r"[^A-Za-z0-9\s]")


@functools.cache
def _variants() -> dict[str, str]:
    """Each character that has script variants → all of them (itself included), sorted."""
    chars = [chr(c) for start, end in _BLOCKS for c in range(start, end)]
    # One character a line: opencc's phrase rules never join two lines.
    folded = simplified("\n".join(chars)).split("\n")
    classes: dict[str, set[str]] = {}
    for char, simple in zip(chars, folded, strict=True):
        if char != simple and len(simple) == 1:
            classes.setdefault(simple, {simple}).add(char)
    return {member: "".join(sorted(members)) for members in classes.values() for member in members}


def _piece(char: str) -> str:
    """One query character as a pattern piece."""
    variants = _variants().get(char)
    if variants:
        return f"[{variants}]"
    if char.isascii() and _ASCII_SPECIAL.match(char):
        return f"\\u{ord(char):04x}"
    return char


def fold_pattern(query: str) -> str | None:
    """A case-insensitive pattern finding `query` in any Chinese script, or None when no
    character of it has a variant (a plain `icontains` finds it then, and faster)."""
    if not any(char in _variants() for char in query):
        return None
    return "".join(_piece(char) for char in query)


def contains_folded(field: str, query: str) -> Q:
    """A filter: `field` contains `query`, case and 繁/简 folded."""
    pattern = fold_pattern(query)
    if pattern is None:
        return Q(**{f"{field}__icontains": query})
    return Q(**{f"{field}__iregex": pattern})


def find_folded(text: str, query: str) -> int:
    """Where `query` first occurs in `text`, case and 繁/简 folded (-1: nowhere)."""
    pattern = fold_pattern(query) or re.escape(query)
    found = re.search(pattern, text, re.IGNORECASE)
    return found.start() if found else -1
