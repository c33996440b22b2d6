"""Title folding and similarity: what makes two titles the same (exact after folding case,
width, spacing, punctuation and Chinese script) and how alike they are (bigram Dice)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from config.text import simplified

# Unicode categories dropped when folding: punctuation (P*), separators (Z*) and controls
# (Cc, Cf). Symbols (S*: "+", "#", "€", emoji) are kept, so "C++ review" is not "C review".
_DROPPED = ("P", "Z", "Cc", "Cf")
_HAN = re.compile(r"[\u3400-\u9fff]")


def normalize(title: str) -> str:
    """The folded form two titles must share to be the same: full-width folded to half-width
    (NFKC), Traditional to Simplified, case-folded, without spaces or punctuation
    ("Call  Mom!" -> "callmom", "寫週報。" -> "写周报")."""
    folded = simplified(unicodedata.normalize("NFKC", title)).casefold()
    return "".join(ch for ch in folded if not unicodedata.category(ch).startswith(_DROPPED))


def resemblance(a: str, b: str) -> float:
    """How alike two titles are, 0.0–1.0, for offering candidates: the bigram Dice, or for
    Chinese titles (short, one character a word) the Dice over characters if higher, so
    写周报 and 写月报 (no shared bigram) still resemble each other."""
    score = dice(a, b)
    left, right = normalize(a), normalize(b)
    if not (_HAN.search(left) and _HAN.search(right)):
        return score
    shared = sum((Counter(left) & Counter(right)).values())
    return max(score, 2.0 * shared / (len(left) + len(right)))


def dice(a: str, b: str) -> float:
    """Sørensen–Dice coefficient over character bigrams of the normalized strings, 0.0–1.0.

    Bigrams are counted as a multiset, so repeated pairs count once per occurrence; strings
    shorter than two characters compare equal or not at all."""
    left, right = normalize(a), normalize(b)
    if left == right:
        return 1.0
    if len(left) < 2 or len(right) < 2:
        return 0.0
    pairs_a = Counter(left[i : i + 2] for i in range(len(left) - 1))
    pairs_b = Counter(right[i : i + 2] for i in range(len(right) - 1))
    shared = sum((pairs_a & pairs_b).values())
    return 2.0 * shared / (sum(pairs_a.values()) + sum(pairs_b.values()))
