"""One tokenizer for indexing and queries: NFKC, Traditional→Simplified, lower case, stemmed
English words and CJK unigrams + bigrams (no word segmentation; two-character words are terms)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

import opencc
import snowballstemmer

# Han (with extension A and compatibility ideographs), kana and Hangul: scripts without spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_RUNS = re.compile(rf"[a-z0-9]+|[{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_MAX_WORD = 40  # longer "words" are hashes or base64: not worth an index term
# Marks derived lexemes in Postgres's tsvector (title words, impact levels): U+01C0 is a letter to
# its parser (a marked term stays one token) but never part of a term (a-z0-9 or CJK).
MARK = "\u01c0"
TITLE_MARK = MARK + "t"

# Query words that say nothing about the content (English and Chinese question words).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "tell",
        "that",
        "the",
        "their",
        "there",
        "this",
        "to",
        "us",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
        "什么",
        "是什",
        "么是",
        "哪些",
        "哪个",
        "如何",
        "怎么",
        "怎样",
        "请问",
        "我们",
        "你们",
        "一下",
        "有没",
        "没有",
        "吗",
    ]
)


@lru_cache(maxsize=1)
def _t2s() -> opencc.OpenCC:
    return opencc.OpenCC("t2s")


@lru_cache(maxsize=1)
def _english() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of an English word: rules → rule, reimbursement → reimburs."""
    return word if word.isdigit() or len(word) < 4 else _english().stemWord(word)


def normalize(text: str) -> str:
    """Fold width, compatibility forms, Traditional characters and case, so 繁/简 compare equal."""
    return _t2s().convert(unicodedata.normalize("NFKC", text)).lower()


def index_terms(text: str) -> list[str]:
    """The terms a passage is indexed under, in order (repeats count for term frequency)."""
    terms: list[str] = []
    for run in _RUNS.findall(normalize(text)):
        if _CJK_RUN.fullmatch(run):
            terms.extend(run)  # unigrams, for one-character queries
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
        elif len(run) <= _MAX_WORD:
            terms.append(stem(run))
    return terms


def title_term(term: str) -> str:
    """The Postgres lexeme that says a passage's document has `term` in its title."""
    return term + TITLE_MARK


class IndexText(NamedTuple):
    """What a passage is indexed under: its own words, its document's title words, and its
    length in terms (its own words only)."""

    words: str
    title: str
    length: int


def passage_index_text(
    title: str, heading_path: list[str] | tuple[str, ...], text: str
) -> IndexText:
    """A passage's index text: its own words (its text and headings, but a heading that repeats
    the title) apart from its document's title words (each once), so the title weighs alike in
    every passage of a document and the passage's own words decide between them."""
    headings = [h for h in heading_path if normalize(h).strip() != normalize(title).strip()]
    own = index_terms(" ".join([*headings, text]))
    return IndexText(" ".join(own), " ".join(dict.fromkeys(index_terms(title))), len(own))


def query_terms(query: str, *, limit: int = 64) -> list[str]:
    """Distinct search terms of a query: stemmed words and CJK bigrams (a lone CJK character as
    itself); stop words are dropped unless nothing else is left."""
    found: list[str] = []
    for run in _RUNS.findall(normalize(query)):
        if _CJK_RUN.fullmatch(run):
            found.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        elif len(run) <= _MAX_WORD:
            found.append(run)
    useful = [term for term in found if term not in STOP_WORDS] or found
    terms = [term if _CJK_RUN.fullmatch(term) else stem(term) for term in useful]
    return list(dict.fromkeys(terms))[:limit]


def coverage(terms: list[str], indexed: str, title: str = "") -> float:
    """The share of query terms a passage's index text or its document's title contains
    (0..1)."""
    if not terms:
        return 0.0
    words = set(indexed.split()) | set(title.split())
    return sum(1 for term in terms if term in words) / len(terms)
