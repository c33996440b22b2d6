"""The turn's model-call budget, taken in one statement: exact at its edge, on either database."""

from __future__ import annotations

import pytest

from delegation.budget import budget_take_delegation_with_calls, budget_take_model_call
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


def test_a_delegation_needs_one_left_and_a_model_call_beyond_the_reserved_ones(user):
    root = new_run(user)
    root.budget = {"max_delegations": 2, "max_model_calls": 5, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(budget=root.budget, tree_model_calls=2)

    # 5 calls, 2 made, 2 reserved for the callers to answer: the expert may make 1, which
    # the delegation takes (its first call: 3 taken now).
    assert budget_take_delegation_with_calls(root=root, reserved=2) == 1
    assert Run.objects.get(pk=root.pk).tree_model_calls == 3
    assert budget_take_delegation_with_calls(root=root, reserved=2) is None  # no call left
    assert budget_take_delegation_with_calls(root=root, reserved=1) == 1
    Run.objects.filter(pk=root.pk).update(tree_model_calls=0)
    assert budget_take_delegation_with_calls(root=root, reserved=1) is None  # 2 delegations
    saved = Run.objects.get(pk=root.pk)
    assert (saved.tree_delegations, saved.tree_model_calls) == (2, 0)
