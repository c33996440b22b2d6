"""One object per process: made once, made again in a forked child, never made by `current`."""

from __future__ import annotations

import multiprocessing
import os

from config.db.per_process import PerProcess


class Made:
    def __init__(self) -> None:
        self.pid = os.getpid()


HOLDER = PerProcess(Made)


def _in_child(parent: Made, answers: multiprocessing.Queue) -> None:
    child = HOLDER.get()
    answers.put((child is parent, child.pid == os.getpid(), HOLDER.get() is child))


def test_made_on_first_use_then_the_same():
    holder = PerProcess(Made)
    assert holder.current() is None  # nothing made just by asking
    made = holder.get()
    assert holder.get() is made and holder.current() is made


def test_a_forked_child_makes_its_own():
    parent = HOLDER.get()
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_in_child, args=(parent, answers))
    child.start()
    same_as_parent, made_in_child, kept = answers.get(timeout=10)
    child.join(timeout=10)
    assert (same_as_parent, made_in_child, kept) == (False, True, True)
    assert HOLDER.get() is parent
