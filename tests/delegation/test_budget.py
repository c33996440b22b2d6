"""The turn's model-call budget, taken in one statement: exact at its edge, on either database."""

from __future__ import annotations

import uuid

import pytest

from delegation.budget import budget_take_delegation, budget_take_model_call
from delegation.models import Run
from tests.test_enqueue import new_run

pytestmark = pytest.mark.django_db


def test_a_turn_takes_exactly_its_model_calls_and_reads_what_was_left(user):
    root = new_run(user)
    root.budget = {"max_delegations": 3, "max_model_calls": 2, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(
        budget=root.budget, tree_model_calls=0, tree_tokens=40, tree_delegations=1
    )

    first = budget_take_model_call(root=root)
    second = budget_take_model_call(root=root)
    third = budget_take_model_call(root=root)

    assert (first.model_calls_left, second.model_calls_left) == (2, 1)  # left before each
    assert first.tokens_left == 60 and first.delegations_left == 2
    assert third is None  # the limit holds: the counter does not pass it
    assert Run.objects.get(pk=root.pk).tree_model_calls == 2


def test_a_turn_without_its_own_limits_uses_the_settings(user, settings):
    settings.TURN_MAX_MODEL_CALLS = 1
    root = new_run(user)
    Run.objects.filter(pk=root.pk).update(budget={}, tree_model_calls=0)
    root.budget = {}  # a run created before turns had limits of their own
    assert budget_take_model_call(root=root).model_calls_left == 1
    assert budget_take_model_call(root=root) is None


def test_a_delegation_needs_one_left_and_a_model_call_beyond_the_answers(user):
    """The expert's first call is taken with its delegation, and with a step's first
    delegation its caller's next call; the callers above it keep one each to answer."""
    root = new_run(user)  # depth 0, at its first step: that call taken with it
    root.budget = {"max_delegations": 3, "max_model_calls": 6, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(budget=root.budget, tree_model_calls=2)
    root.steps = 2  # two calls made; its step that asks experts is the second

    # 6 calls, 2 made: the expert's first and the caller's next (its answer) are taken, and
    # the expert may make 3 in all (6 - 2 - the caller's answer).
    assert budget_take_delegation(caller=root, root=root) == 3
    assert (root.tree_model_calls, root.reserved_call) == (4, 2)
    # A second expert in the same step: its first call only (the caller's is taken).
    assert budget_take_delegation(caller=root, root=root) == 2
    assert budget_take_delegation(caller=root, root=root) == 1
    assert budget_take_delegation(caller=root, root=root) is None  # 3 delegations
    saved = Run.objects.get(pk=root.pk)
    assert (saved.tree_delegations, saved.tree_model_calls) == (3, 6)


def test_a_delegation_leaves_a_call_for_each_caller_above_to_answer(user):
    root = new_run(user)
    root.budget = {"max_delegations": 5, "max_model_calls": 5, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(budget=root.budget, tree_model_calls=2)
    caller = Run(pk=uuid.uuid4(), depth=2, steps=1, reserved_call=None)  # two runs above it

    # 5 calls, 2 made; the caller's next and the expert's first taken (4), and one left for
    # the two runs above to answer: not enough.
    assert budget_take_delegation(caller=caller, root=root) is None
    caller.depth = 1  # one run above: 2 made + 2 taken + 1 to answer = 5
    assert budget_take_delegation(caller=caller, root=root) == 1
    assert Run.objects.get(pk=root.pk).tree_model_calls == 4
