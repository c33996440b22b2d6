"""One tokenizer for indexing and queries: NFKC, Traditional→Simplified, lower case, stemmed
English words and CJK unigrams + bigrams (no word segmentation; two-character words are terms)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import opencc
import snowballstemmer

# Han (with extension A and compatibility ideographs), kana and Hangul: scripts without spaces.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_RUNS = re.compile(rf"[a-z0-9]+|[{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_MAX_WORD = 40  # longer "words" are hashes or base64: not worth an index term

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


def coverage(terms: list[str], indexed: str) -> float:
    """The share of query terms a passage's index text contains (0..1)."""
    if not terms:
        return 0.0
    words = set(indexed.split())
    return sum(1 for term in terms if term in words) / len(terms)
