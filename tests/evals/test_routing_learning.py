"""An eval suite compares routing with and without learning on the same cases: the eval run's
override routes every turn with learning off or on, and compare_routing_learning prints both
side by side with their pass rates."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from config.errors import AppError
from delegation.evals.learning import learning_comparison
from delegation.evals.targets import target_text
from delegation.routing.models import RoutingStat
from delegation.routing.seeds import routing_seed
from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)

TIE = "Can finance or hr tell me who approves travel?"  # both mentioned; no rule names one


@pytest.fixture
def suite(db):
    """An offline entry agent with two experts; finance has done badly lately, hr well."""
    finance = make_agent("finance", display_name="Finance", tags=["finance"])
    hr = make_agent("hr", display_name="HR", tags=["hr"])
    boss = make_agent("boss", is_entry=True, subagents=[finance, hr])
    routing_seed(name="site-assistant", entry_agents=[boss])  # learning off in the policy
    for expert, good, bad in (("finance", 2, 8), ("hr", 9, 1)):
        RoutingStat.objects.create(
            entry="boss",
            expert=expert,
            intent="none",
            day=timezone.now().date(),
            delegations=10,
            succeeded=10,
            validation_passed=good,
            validation_failed=bad,
        )
    suite = make_suite(boss, name="approvals")
    make_case(suite, TIE, name="who approves", expect={"experts": {"names": ["hr"]}})
    return suite


def test_the_same_cases_route_differently_with_learning_on(suite):
    off = run_suite(suite, learning="off")
    on = run_suite(suite, learning="on")

    routed = [r.evidence["routing"] for r in (*off.results.all(), *on.results.all())]
    assert [r["target"] for r in routed] == ["finance", "hr"]
    assert routed[0]["learning"] is None and routed[1]["learning"]["mode"] == "on"
    compared = learning_comparison(without=off, with_learning=on)
    assert compared["routed_differently"] == 1
    assert compared["pass_rate"] == {"off": 0.0, "on": 100.0}
    assert target_text(on.target).endswith("routing learning on, each agent's own model")
    # Eval turns teach routing nothing: both sides read the same figures.
    assert sorted(RoutingStat.objects.values_list("expert", "delegations")) == [
        ("finance", 10),
        ("hr", 10),
    ]


def test_a_bad_learning_value_is_refused(suite):
    with pytest.raises(AppError, match="off, advisory or on"):
        run_suite(suite, learning="sometimes")


def test_the_command_prints_both_sides_and_the_pass_rates(suite):
    out = StringIO()
    call_command("compare_routing_learning", "approvals", stdout=out)
    text = out.getvalue()
    assert "finance (failed)" in text and "hr (passed)" in text
    assert "pass rate: off 0.0%, on 100.0%; routed differently: 1 of 1" in text
    with pytest.raises(CommandError, match="No such eval suite"):
        call_command("compare_routing_learning", "nope", stdout=StringIO())
