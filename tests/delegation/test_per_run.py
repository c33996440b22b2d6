"""What a run reads once for all its deliveries in a process (delegation/per_run.py): what its
model is offered is kept, what a delegation is allowed is checked when it is asked."""

from __future__ import annotations

import pytest

from agents.models import Agent
from delegation.models import Run
from delegation.runs import per_run as per_run_module
from delegation.runs.per_run import per_run
from delegation.tree.guards import DelegationRefused, delegation_check, delegation_targets
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run

pytestmark = pytest.mark.django_db


def test_a_later_delivery_offers_what_the_first_read_and_checks_what_is_asked_now(user):
    agents = make_team(lead=["finance", "hr"], finance=[], hr=[])
    run = start_run(user, agents["lead"])
    assert [a.name for a in delegation_targets(caller=run)] == ["finance", "hr"]
    Agent.objects.filter(name="hr").update(enabled=False)  # by an admin, mid-turn
    again = Run.objects.get(pk=run.pk)  # the run's next delivery
    assert [a.name for a in delegation_targets(caller=again)] == ["finance", "hr"]
    with pytest.raises(DelegationRefused) as refused:
        delegation_check(caller=again, target_name="hr")
    assert refused.value.code == "delegation_unavailable"
    other = start_run(user, agents["lead"])  # a new turn reads the agents as they are
    assert [a.name for a in delegation_targets(caller=other)] == ["finance"]


def test_only_the_most_recent_runs_are_kept(monkeypatch):
    monkeypatch.setattr(per_run_module, "RUNS", 2)
    reads_kept = per_run_module._Reads()
    monkeypatch.setattr(
        per_run_module, "_READS", type("One", (), {"get": lambda self: reads_kept})()
    )
    reads = []

    class R:
        def __init__(self, pk):
            self.pk = pk

    def read(pk):
        return per_run(R(pk), "x", lambda: reads.append(pk) or pk)

    assert [read(1), read(2), read(1), read(3), read(1), read(2)] == [1, 2, 1, 3, 1, 2]
    # 1 and 2 read, 1 kept, 3 read (2 dropped: least recent), 1 kept, 2 read again.
    assert reads == [1, 2, 3, 2]
