"""An eval run's report says when a case waited for a person and how the wait was decided."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent
from tests.fake_openai import Team, text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_report_shows_the_waits_of_a_case(admin_client, fake_openai):
    agent = make_agent(
        "gated",
        provider="openai",
        model="fake-model",
        is_entry=True,
        tool_keys=["create_task"],
        require_approval=True,
    )
    Team(fake_openai).script(
        "gated", tool_call("create_task", {"title": "call Ana"}), text("Created the task.")
    )
    suite = make_suite(agent)
    make_case(suite, "add a task: call Ana", expect={"human": {"decision": "approve"}})
    run = run_suite(suite)

    html = admin_client.get(reverse("admin:evals_evalrun_change", args=[run.pk])).content.decode()

    assert (
        "<strong>Waited for a person:</strong> waited for staff approval of create_task (approved)"
        in html
    )


def test_the_report_of_a_case_that_never_waited_has_no_waits(admin_client, fake_openai):
    agent = make_agent("free", provider="openai", model="fake-model", is_entry=True)
    Team(fake_openai).script("free", text("Hi."))
    suite = make_suite(agent)
    make_case(suite, "hello")
    run = run_suite(suite)

    html = admin_client.get(reverse("admin:evals_evalrun_change", args=[run.pk])).content.decode()

    assert "Sandbox user" in html and "Waited for a person" not in html


def test_a_case_keeps_its_human_expectation_when_saved_in_admin(admin_client, entry_agent):
    suite = make_suite(entry_agent)
    case = make_case(suite, "hi", expect={"human": {"decision": "approve", "answer": "Friday"}})
    url = reverse("admin:evals_evalcase_change", args=[case.pk])
    form = admin_client.get(url).context["adminform"].form
    assert (form["human_decision"].value(), form["human_answer"].value()) == ("approve", "Friday")

    data = {
        "suite": str(suite.pk),
        "name": case.name,
        "order": "0",
        "enabled": "on",
        "message": "hi again",
        "experts_match": "set",
        "human_decision": "approve",
        "human_answer": "Friday",
    }
    response = admin_client.post(url, data)

    assert response.status_code == 302
    case.refresh_from_db()
    assert case.message == "hi again"
    assert case.expect == {"human": {"decision": "approve", "answer": "Friday"}}


def test_an_answer_without_approve_is_refused_on_its_field(admin_client, entry_agent):
    suite = make_suite(entry_agent)
    data = {
        "suite": str(suite.pk),
        "name": "asks",
        "order": "0",
        "enabled": "on",
        "message": "hi",
        "experts_match": "set",
        "human_decision": "reject",
        "human_answer": "Friday",
    }
    response = admin_client.post(reverse("admin:evals_evalcase_add"), data)

    assert "human_answer" in response.context["adminform"].form.errors
    assert not suite.cases.exists()
