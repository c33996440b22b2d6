"""Bigram Dice similarity: the near-duplicate threshold and the fuzzy lookup both rest on it."""

from __future__ import annotations

import pytest

from reminders.similarity import dice, normalize


def test_normalize_ignores_case_spaces_and_punctuation_but_keeps_chinese():
    assert normalize("  Call  MOM! ") == "callmom"
    assert normalize("去机场，接人") == "去机场接人"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("night", "nacht", 0.25),  # the textbook example: 1 shared bigram of 4 + 4
        ("buy milk", "Buy milk!", 1.0),
        ("abc", "xyz", 0.0),
        ("a", "a", 1.0),
        ("a", "b", 0.0),
        ("", "", 1.0),
        ("", "ab", 0.0),
        ("aaaa", "aa", 0.5),  # bigrams are a multiset: aa×3 vs aa×1
    ],
)
def test_dice_values(a, b, expected):
    assert dice(a, b) == pytest.approx(expected)


def test_near_duplicates_reach_the_threshold_and_different_tasks_do_not():
    assert dice("Pick up Anna at the airport", "pick up anna at airport") >= 0.75
    assert dice("去机场接人", "去机场接朋友") < 0.75
    assert dice("去机场接人", "去机场接人吧") >= 0.75
    assert dice("Buy milk", "Buy bread") < 0.75
    assert dice("Dentist appointment", "Dentist appointmnet") >= 0.75  # a typo


def test_dice_is_symmetric():
    assert dice("airport pickup", "pickup at airport") == dice(
        "pickup at airport", "airport pickup"
    )
