"""Chinese script folding shared by every app: Traditional and Simplified compare equal."""

from __future__ import annotations

import functools

import opencc


@functools.cache
def _to_simplified() -> opencc.OpenCC:
    return opencc.OpenCC("t2s")


def simplified(text: str) -> str:
    """The text in Simplified Chinese characters (買菸 -> 买烟, 三點半 -> 三点半); other scripts
    are unchanged."""
    return _to_simplified().convert(text)
