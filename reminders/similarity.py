"""Title similarity: the bigram Dice coefficient, for near-duplicate and fuzzy task lookup."""

from __future__ import annotations

import re
from collections import Counter

_NOISE = re.compile(r"[\W_]+", re.UNICODE)  # spaces and punctuation; CJK characters are kept


def normalize(title: str) -> str:
    """Case-folded, without spaces or punctuation ("Call  Mom!" -> "callmom")."""
    return _NOISE.sub("", title.casefold())


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
