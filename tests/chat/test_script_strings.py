"""Every sentence the chat page's scripts show goes through gettext (static/chat/i18n.js), so a
Chinese page has no English left in it: a scan of the string literals of static/chat/*.js."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "static" / "chat"

# The page's own scripts (citations.js, humans.js, memory.js and render.js have their own
# owners and tests; add them here once they pass).
SCRIPTS = [
    "actions.js",
    "api.js",
    "drafts.js",
    "follow.js",
    "i18n.js",
    "main.js",
    "markdown-stream.js",
    "markdown.js",
    "math.js",
    "sessions.js",
    "socket.js",
    "theme.js",
    "ui.js",
    "undo.js",
    "voice.js",
]

# Literals that look like words but are never shown: key names, an error for the console.
NOT_SHOWN = {"Escape", "Enter", "KaTeX did not load"}

# A literal passed straight to gettext( or as ngettext's first or second argument.
WRAPPED = re.compile(r"\bn?gettext\(\s*$|\bngettext\(\s*\"[^\"]*\",\s*$")
# Words for people: a capitalised word followed by more words, or a sentence's end.
PROSE = re.compile(r"^[A-Z][a-z]+(?: |[.…!?]?$)|[A-Za-z]{2,} [a-z]+.*[.…!?:]$")
REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")


def string_literals(source: str) -> list[tuple[int, str, str]]:
    """(line, text, the code just before it) for each string literal of a JavaScript source:
    comments and regular expression literals are skipped; `${…}` inside templates is kept as
    `${}`."""
    found: list[tuple[int, str, str]] = []
    i, line, last, word = 0, 1, "", ""
    while i < len(source):
        c = source[i]
        if c == "\n":
            line += 1
        if c.isspace():
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = len(source) if end < 0 else end
        elif source.startswith("/*", i):
            end = source.index("*/", i + 2)
            line += source.count("\n", i, end)
            i = end + 2
        elif c in "\"'`":
            end, text = _string_end(source, i)
            found.append((line, text, source[max(0, i - 60) : i]))
            line += source.count("\n", i, end)
            i, last = end + 1, c
        elif c == "/" and (last in REGEX_BEFORE or word in {"return", "typeof", "case"}):
            i, last = _regex_end(source, i), "x"
        elif match := re.match(r"[A-Za-z_$][\w$]*", source[i:]):
            word, last = match.group(), "x"
            i += match.end()
        else:
            last, word = c, ""
            i += 1
    return found


def _string_end(source: str, start: int) -> tuple[int, str]:
    quote, i, text = source[start], start + 1, []
    while source[i] != quote:
        if source[i] == "\\":
            text.append(source[i : i + 2])
            i += 2
        elif quote == "`" and source.startswith("${", i):
            depth, i = 1, i + 2
            while depth:
                depth += {"{": 1, "}": -1}.get(source[i], 0)
                i += 1
            text.append("${}")
        else:
            text.append(source[i])
            i += 1
    return i, "".join(text)


def _regex_end(source: str, start: int) -> int:
    i, in_class = start + 1, False
    while True:
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            break
        i += 1
    i += 1
    while i < len(source) and source[i].isalpha():  # flags
        i += 1
    return i


def unwrapped_prose(source: str) -> list[tuple[int, str]]:
    """The literals that read as words for people but do not go through gettext."""
    return [
        (line, text)
        for line, text, before in string_literals(source)
        if PROSE.search(text) and text not in NOT_SHOWN and not WRAPPED.search(before)
    ]


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_sentence_of_the_script_is_translated(name):
    assert unwrapped_prose((STATIC / name).read_text(encoding="utf-8")) == []


def test_the_scan_finds_an_english_sentence_and_passes_a_translated_one():
    source = """
    // "Not this one", a comment.
    const re = /"Not a string/g;
    say("Copied to the clipboard.");
    button.title = `Open ${name} now`;
    say(gettext("Copied"));
    say(ngettext("%(count)s token", "%(count)s tokens", n));
    if (e.key === "Escape") close("dialog-open");
    """
    assert unwrapped_prose(source) == [(4, "Copied to the clipboard."), (5, "Open ${} now")]
