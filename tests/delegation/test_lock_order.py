"""The rows of a turn are locked top down: every transaction that locks two runs of a tree
locks the shallowest first (the root, or the caller an expert reports to), before the spend
counters and any deeper run (as a stop locks a tree: root first, then by depth), so the steps
of one tree, their priced calls and a stop never wait on each other's rows. Read from the
statements of a priced depth-2 turn, in order, on Postgres (SQLite has no row locks; its
writers queue)."""

from __future__ import annotations

import pytest
from django.db import connection

from agents.models import Agent
from delegation.models import Run, RunStatus
from delegation.runs.ending import run_stop
from tests.delegation.conftest import make_team
from tests.delegation.test_end_reported import Writes, run_turn
from tests.delegation.test_runner import start_run
from tests.factories import make_child_run
from tests.fake_openai import delegate, text, tool_calls
from tests.usage.conftest import make_price

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: Postgres only"),
]


def transactions(log: list[str]) -> list[list[str]]:
    """The statements of each transaction, in order (BEGIN/COMMIT markers dropped)."""
    done: list[list[str]] = [[]]
    for statement in log:
        if statement == "COMMIT":
            done.append([])
        else:
            done[-1].append(statement)
    return [t for t in done if t]


def locks(statement: str) -> bool:
    """Whether a statement takes row locks: an UPDATE, or a SELECT … FOR (NO KEY) UPDATE."""
    return (
        statement.startswith("UPDATE ")
        or " FOR UPDATE" in statement
        or (" FOR NO KEY UPDATE" in statement)
    )


def names(statement: str, run: Run) -> bool:
    """Whether a statement on runs names `run` (a spend counter's key may name its turn)."""
    return '"delegation_run"' in statement.split(" WHERE ")[0] and str(run.pk) in statement


@pytest.mark.parametrize("first", ["refused", "taken", "reattempted"])
def test_a_priced_turn_locks_its_runs_top_down_before_the_counters(
    team, user, sent, monkeypatch, first
):
    make_price(output="1")  # every call costs a little: its ledger row adds to spend counters
    agents = make_team(lead=["mid"], mid=["leaf", "tax"], leaf=[], tax=[])
    team.script("lead", delegate("mid"), text("lead done"))
    # The middle expert asks two of its own, one of them unknown, so its step writes a refusal
    # and a take: the refusal first (the root locked on its own first), or the take (its first
    # take, made before its other writes, locks the root).
    asks = [
        ("delegate", {"target": "nobody", "task": "x"}),
        ("delegate", {"target": "leaf", "task": "y"}),
    ]
    if first == "reattempted":  # the leaf's first answer is judged invalid: it is asked again
        Agent.objects.filter(name="leaf").update(
            validate_answers="rules", fallback_chain=["retry", "low_confidence"]
        )
        team.script("mid", delegate("leaf"), text("mid done"))
        team.script("leaf", text(""), text("leaf done"))
    else:
        team.script("mid", tool_calls(*(asks if first == "refused" else asks[::-1])))
        team.script("mid", text("mid done"))
        team.script("leaf", text("leaf done"))
    root = start_run(user, agents["lead"])
    writes = Writes(monkeypatch)
    with connection.execute_wrapper(writes):
        run_turn(root, sent)
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.answer == "lead done"
    below = list(Run.objects.filter(root=root))
    assert {r.agent_config["name"] for r in below} == {"mid", "leaf"}
    assert len(below) == (3 if first == "reattempted" else 2)
    tree = [root, *below]
    checked = 0
    for statements in transactions(writes.log):
        # What each locking statement locks: the spend counters, or a run of the tree (the
        # shallowest it names: a caller's read names its expert only in what it reads besides).
        order: list = []
        for statement in filter(locks, statements):
            named = [run for run in tree if names(statement, run)]
            if "usage_spendcounter" in statement:
                order.append("counters")
            elif named:
                order.append(min(named, key=lambda run: run.depth))
        if len({x.pk for x in order if x != "counters"}) < 2:
            # (one run: its own step or claim. Nobody else locks a run running a step: its
            # experts report only while it waits, and one ended meanwhile reads it no more.)
            continue
        checked += 1
        shallowest = min(x.depth for x in order if x != "counters")
        assert order[0] != "counters" and order[0].depth == shallowest, "\n".join(statements)
    # The experts' steps that cost and lock two runs: the middle expert's ask (the root, then
    # itself), the leaf's answer (its caller, then itself) and the middle expert's answer.
    assert checked >= 3
    assert any("usage_spendcounter" in s for s in writes.log)


def test_a_stopped_expert_s_caller_is_locked_before_the_expert(team, user, monkeypatch):
    """A stop reports the stopped expert to its caller in its own transaction: it locks the
    caller first, as an expert's answering commit does, so the two never wait on each other."""
    agents = make_team(lead=["expert"], expert=[])
    root = start_run(user, agents["lead"])
    expert = make_child_run(
        caller=root, target=agents["expert"], call_id="c1", prompt="q", reason="", max_steps=3
    )
    Run.objects.filter(pk=root.pk).update(status=RunStatus.WAITING)
    writes = Writes(monkeypatch)
    with connection.execute_wrapper(writes):
        assert run_stop(run=expert)
    order = []
    for statement in filter(locks, writes.log):
        named = [run for run in (root, expert) if names(statement, run)]
        if named:
            order.append(min(named, key=lambda run: run.depth).pk)
    assert order and order[0] == root.pk, order  # the caller, before the expert's subtree
    assert expert.pk in order
