"""The demo suites: seed_demo loads planner and departments, and both pass out of the box with
the offline model (run_evals exits 0); seeding again keeps an admin's edits."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from delegation.evals.models import EvalSuite


@pytest.fixture
def seeded(db, settings) -> None:
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    call_command("seed_demo", stdout=StringIO())


@pytest.mark.django_db(transaction=True)
def test_run_evals_planner_exits_0_out_of_the_box(seeded):
    out = StringIO()
    call_command("run_evals", "planner", stdout=out)  # a CommandError would be a non-zero exit
    text = out.getvalue()
    for case in ("create a task", "finish, not create", "free time", "weather", "no joke"):
        assert f"PASS  {case}" in text, text
    assert "PASS  airport plan" in text  # three experts, one after the other
    assert "planner: 6/6 passed (100.0%), threshold 100%: passed" in text


@pytest.mark.django_db(transaction=True)
def test_run_evals_departments_passes_routed_cited_and_refused(seeded):
    out = StringIO()
    call_command("run_evals", "departments", stdout=out)
    assert "departments: 3/3 passed (100.0%), threshold 100%: passed" in out.getvalue()


@pytest.mark.django_db
def test_seeding_again_keeps_the_suites_as_admins_left_them(seeded):
    EvalSuite.objects.filter(name="planner").update(pass_threshold=50)
    EvalSuite.objects.get(name="departments").cases.first().delete()
    call_command("seed_demo", stdout=StringIO())
    assert EvalSuite.objects.get(name="planner").pass_threshold == 50
    assert EvalSuite.objects.get(name="departments").cases.count() == 2
    assert EvalSuite.objects.get(name="planner").cases.count() == 6
