"""Evals in admin: a case form with one field per expectation (errors on the field), running a
suite, the report with a progress bar that refreshes without script, cancel and run again."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from delegation.evals.models import EvalCase, EvalRun, EvalRunStatus
from delegation.evals.services import eval_run_start
from tests.evals.conftest import make_case, make_suite
from tests.factories import make_user

ADD_CASE = reverse("admin:evals_evalcase_add")


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def suite(entry_agent):
    suite = make_suite(entry_agent, name="arith")
    make_case(suite, "what is 6*7?", name="multiplies", expect={"answer_contains": ["42"]})
    return suite


def case_form(suite: Any, **values: Any) -> dict[str, Any]:
    """The case add form as posted, with `values`."""
    data = {"suite": str(suite.pk), "name": "new case", "order": "1", "enabled": "on"}
    data.update({"message": "what is 2+2?", "experts_match": "set", **values})
    return data


def no_inline_script(html: str) -> bool:
    """Every <script> of the page loads a file (the site's CSP allows no inline script)."""
    return all("src=" in tag for tag in re.findall(r"<script[^>]*>", html))


@pytest.mark.django_db
def test_a_case_is_added_with_one_field_per_expectation(admin_client, suite):
    response = admin_client.post(
        ADD_CASE,
        case_form(
            suite,
            mode="CHAT",
            experts="none",
            tools_called="calculate",
            answer_contains="4\nfour",
            tool_arguments='[{"tool": "calculate", "arguments": {"expression": "2+2"}}]',
            max_cost="0.05",
            rubric="Gives the sum.",
            prior_turns_text='[{"user": "hi", "assistant": "Hello!"}]',
            permissions_text="reminders.view_task",
            flags_choice=["force_strict"],
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    case = EvalCase.objects.get(name="new case")
    assert case.expect == {
        "mode": "CHAT",
        "experts": {"names": [], "match": "set"},
        "tools_called": ["calculate"],
        "tool_arguments": [{"tool": "calculate", "arguments": {"expression": "2+2"}}],
        "answer_contains": ["4", "four"],
        "max_cost": "0.05",
        "rubric": "Gives the sum.",
    }
    assert case.prior_turns == [{"user": "hi", "assistant": "Hello!"}]
    assert case.flags == {"force_strict": True} and case.user_permissions == ["reminders.view_task"]
    form = (
        admin_client.get(reverse("admin:evals_evalcase_change", args=[case.pk]))
        .context["adminform"]
        .form
    )
    assert (form["experts"].value(), form["answer_contains"].value()) == ("none", "4\nfour")


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"answer_regex": "(oops"}, "answer_regex", "Not a regular expression"),
        ({"tools_called": "teleport"}, "tools_called", "No tool is registered as teleport"),
        ({"experts": "ghost"}, "experts", "No agent is named ghost"),
        ({"permissions_text": "no.such"}, "permissions_text", "No such permission"),
        ({"prior_turns_text": '[{"user": ""}]'}, "prior_turns_text", "Earlier turns"),
        ({"tool_arguments": "{not json"}, "__all__", "Not JSON"),
        ({"message": "  "}, "message", "required"),
        ({"user_timezone": "Nowhere/Town"}, "user_timezone", "not an IANA timezone"),
    ],
)
@pytest.mark.django_db
def test_a_bad_case_is_refused_on_its_field_and_nothing_is_saved(
    admin_client, suite, values, field, words
):
    response = admin_client.post(ADD_CASE, case_form(suite, **values))
    errors = response.context["adminform"].form.errors
    assert any(words in e for e in errors[field]), errors
    assert not EvalCase.objects.filter(name="new case").exists()


@pytest.mark.django_db(transaction=True)
def test_running_a_suite_from_its_page_shows_the_report(admin_client, suite, settings):
    page = admin_client.get(reverse("admin:evals_evalsuite_change", args=[suite.pk])).content
    run_url = reverse("admin:evals_evalsuite_run", args=[suite.pk])
    assert run_url in page.decode()
    form = admin_client.get(run_url)
    assert "current versions of every agent" in form.content.decode()
    response = admin_client.post(run_url, {"model": "offline"}, follow=True)
    html = response.content.decode()
    assert "1/1 passed (100.0%)" in html and 'id="evals-verdict">PASSED' in html
    assert "[offline model] 6*7 = 42." in html and "<details>" in html
    assert 'http-equiv="refresh"' not in html and "<progress" not in html  # it has ended
    assert no_inline_script(html)


@pytest.mark.django_db(transaction=True)
def test_a_running_report_shows_progress_and_refreshes_itself(admin_client, suite):
    run = eval_run_start(suite=suite, start=False)
    html = admin_client.get(reverse("admin:evals_evalrun_change", args=[run.pk])).content.decode()
    assert '<meta http-equiv="refresh" content="2">' in html
    assert '<progress id="evals-progress-' in html and "0 of 1 cases done (0%)" in html
    assert no_inline_script(html)


@pytest.mark.django_db(transaction=True)
def test_a_run_nobody_picked_up_is_sent_again_when_its_report_is_viewed(admin_client, suite):
    run = eval_run_start(suite=suite, start=False)  # as if its task was lost
    EvalRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    html = admin_client.get(reverse("admin:evals_evalrun_change", args=[run.pk])).content.decode()
    run.refresh_from_db()
    assert run.status == EvalRunStatus.FINISHED and run.succeeded
    assert 'id="evals-verdict">QUEUED' in html  # shown as it was; the next refresh has it


@pytest.mark.django_db(transaction=True)
def test_cancel_then_run_again(admin_client, suite):
    run = eval_run_start(suite=suite, start=False)
    admin_client.post(reverse("admin:evals_evalrun_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == EvalRunStatus.CANCELLED and run.results.get().status == "cancelled"
    response = admin_client.post(reverse("admin:evals_evalrun_again", args=[run.pk]))
    again = EvalRun.objects.exclude(pk=run.pk).get()
    assert response["Location"] == reverse("admin:evals_evalrun_change", args=[again.pk])
    assert again.succeeded
    html = admin_client.get(response["Location"]).content.decode()
    assert "Against the previous run" not in html  # a cancelled run is no baseline


@pytest.mark.django_db(transaction=True)
def test_staff_without_the_run_permission_cannot_start_one(client, suite):
    staff = make_user("viewer", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_evalsuite"))
    client.force_login(staff)
    response = client.post(reverse("admin:evals_evalsuite_run", args=[suite.pk]), {})
    assert response.status_code == 403 and not EvalRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_agent_page_lists_its_suites_with_their_last_result(admin_client, suite, entry_agent):
    url = reverse("admin:agents_agent_change", args=[entry_agent.pk])
    html = admin_client.get(url).content.decode()
    assert reverse("admin:evals_evalsuite_change", args=[suite.pk]) in html and "(—)" in html
    admin_client.post(reverse("admin:evals_evalsuite_run", args=[suite.pk]), {})
    assert "1/1 (100.0%) passed" in admin_client.get(url).content.decode()
