"""An answer as a chat app shows it: plain text, numbered sources, pieces within a size limit."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _

_FENCE = re.compile(r"^\s*```.*$", re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BULLET = re.compile(r"^(\s*)[*+-]\s+", re.MULTILINE)


def plain_text(markdown: str) -> str:
    """Markdown as plain text: no marks, links as "text (url)", bullets as "・"."""
    text = _FENCE.sub("", markdown)
    text = _HEADING.sub("", text)
    text = _LINK.sub(r"\1 (\2)", text)
    text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3), text)
    text = _CODE.sub(r"\1", text)
    text = _BULLET.sub(r"\1・", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def sources_text(citations: list[dict[str, Any]]) -> str:
    """The answer's sources as numbered lines ("" for none), in the active language."""
    lines = []
    for number, citation in enumerate(citations, start=1):
        ref = str(citation.get("ref") or number)
        title = citation.get("title") or citation.get("document") or ""
        lines.append(f"[{ref.strip('[]')}] {title}".rstrip())
    return (_("Sources:") + "\n" + "\n".join(lines)) if lines else ""


def pieces(text: str, limit: int) -> list[str]:
    """The text in pieces of at most `limit` characters, cut between paragraphs where it can,
    else between lines, else anywhere (a line longer than a piece)."""
    out: list[str] = []
    current = ""
    for paragraph in text.split("\n\n"):
        for part in _within(paragraph, limit, "\n"):
            joined = f"{current}\n\n{part}" if current else part
            if len(joined) <= limit:
                current = joined
                continue
            if current:
                out.append(current)
            current = part
    if current:
        out.append(current)
    return out or [""]


def _within(text: str, limit: int, separator: str) -> list[str]:
    """`text` as parts of at most `limit` characters, cut at `separator`, else hard."""
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    current = ""
    for line in text.split(separator):
        while len(line) > limit:
            if current:
                parts.append(current)
                current = ""
            parts.append(line[:limit])
            line = line[limit:]
        joined = f"{current}{separator}{line}" if current else line
        if len(joined) <= limit:
            current = joined
        else:
            parts.append(current)
            current = line
    if current:
        parts.append(current)
    return parts
