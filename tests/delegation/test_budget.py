"""The turn's model-call budget, taken in one statement: exact at its edge, on either database."""

from __future__ import annotations

import uuid

import pytest

from delegation.models import Run
from delegation.tree.budget import (
    budget_reserved_call,
    budget_state,
    budget_take_delegation,
    budget_take_model_call,
    budget_tokens_used,
)
from delegation.usage.models import UsageRecord
from tests.test_enqueue import new_run

pytestmark = pytest.mark.django_db


def test_a_turn_takes_exactly_its_model_calls_and_reads_what_was_left(user):
    root = new_run(user)
    root.budget = {"max_delegations": 3, "max_model_calls": 2, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(
        budget=root.budget, tree_model_calls=0, tree_delegations=1
    )
    ledger_row(root, prompt=30, completion=10)  # the turn's tokens are its ledger's

    first = budget_take_model_call(root=root)
    second = budget_take_model_call(root=root)
    third = budget_take_model_call(root=root)

    assert (first.model_calls_left, second.model_calls_left) == (2, 1)  # left before each
    assert first.tokens_left == 60 and first.delegations_left == 2
    assert third is None  # the limit holds: the counter does not pass it
    assert Run.objects.get(pk=root.pk).tree_model_calls == 2


def ledger_row(run, *, prompt, completion):
    """A model call of `run`'s turn, as its ledger records it."""
    return UsageRecord.objects.create(
        day=run.created_at.date(),
        run_id=run.pk,
        root_id=run.root_id_or_self,
        provider="openai",
        model="m",
        prompt_tokens=prompt,
        completion_tokens=completion,
        currency="USD",
    )


def test_a_turn_s_tokens_are_its_ledger_s_whoever_made_the_calls(user):
    """Every ledger row of the turn counts (an expert's, a check's), another turn's does not."""
    root, other = new_run(user), new_run(user)
    assert budget_tokens_used(root_id=root.pk) == 0
    expert = Run.objects.get(pk=new_run(user).pk)
    expert.root_id = root.pk
    ledger_row(root, prompt=5, completion=2)
    ledger_row(expert, prompt=20, completion=3)
    ledger_row(other, prompt=100, completion=100)
    assert budget_tokens_used(root_id=root.pk) == 30
    root.budget = {"max_delegations": 3, "max_model_calls": 5, "max_tokens": 30}
    Run.objects.filter(pk=root.pk).update(budget=root.budget)
    assert budget_state(root_id=root.pk).tokens_left == 0
    taken = budget_take_model_call(root=root)
    assert taken.tokens_left == 0  # read in the take's statement
    assert taken.must_answer()  # the turn's tokens are spent: its next call offers no tools
    root.reserved_call = root.steps  # a call taken already (its delegation's): read
    assert budget_reserved_call(run=root).tokens_left == 0


def test_a_turn_without_its_own_limits_uses_the_settings(user, settings):
    settings.TURN_MAX_MODEL_CALLS = 1
    root = new_run(user)
    Run.objects.filter(pk=root.pk).update(budget={}, tree_model_calls=0)
    root.budget = {}  # a run created before turns had limits of their own
    assert budget_take_model_call(root=root).model_calls_left == 1
    assert budget_take_model_call(root=root) is None


def test_a_delegation_takes_its_expert_s_first_call_and_its_caller_s_next(user):
    """The expert's first call is taken with its delegation, and with a step's first
    delegation its caller's next call (its answer): the expert may use the rest."""
    root = new_run(user)  # depth 0, at its first step: that call taken with it
    root.budget = {"max_delegations": 3, "max_model_calls": 6, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(budget=root.budget, tree_model_calls=2)
    root.steps = 2  # two calls made; its step that asks experts is the second

    # 6 calls, 2 made, 2 taken now: the expert may make its first and the 2 left.
    assert budget_take_delegation(caller=root, root=root) == 3
    assert (Run.objects.get(pk=root.pk).tree_model_calls, root.reserved_call) == (4, 2)
    # A second expert in the same step: its first call only (the caller's is taken).
    assert budget_take_delegation(caller=root, root=root) == 2
    assert budget_take_delegation(caller=root, root=root) == 1
    assert budget_take_delegation(caller=root, root=root) is None  # 3 delegations
    saved = Run.objects.get(pk=root.pk)
    assert (saved.tree_delegations, saved.tree_model_calls) == (3, 6)


def test_a_delegation_needs_the_calls_it_takes(user):
    root = new_run(user)
    root.budget = {"max_delegations": 5, "max_model_calls": 5, "max_tokens": 100}
    Run.objects.filter(pk=root.pk).update(budget=root.budget, tree_model_calls=4)
    caller = Run(pk=uuid.uuid4(), depth=1, steps=1, reserved_call=None)

    # 5 calls, 4 made: no room for the expert's first and the caller's next.
    assert budget_take_delegation(caller=caller, root=root) is None
    # A fallback attempt (its caller's next taken with the delegation it replaces): room.
    assert budget_take_delegation(caller=caller, root=root, callers_next=False) == 1
    assert Run.objects.get(pk=root.pk).tree_model_calls == 5
