"""Evals over REST (staff): suites, cases with their rules as 400s naming the field, runs
started through the queue with their report and diff, cancelling; others get 403."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from delegation.evals.models import EvalRun
from tests.factories import make_user


@pytest.fixture
def api(admin_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def create_suite(api: APIClient, **fields: object) -> dict:
    response = api.post(
        "/api/v1/evals/suites/", {"name": "arith", "agent": "assistant", **fields}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_suites_and_cases_are_created_read_changed_and_deleted(api, entry_agent):
    suite = create_suite(api, pass_threshold=80)
    assert suite["agent"] == "assistant" and suite["case_count"] == 0
    case = api.post(
        f"/api/v1/evals/suites/{suite['id']}/cases/",
        {
            "name": "multiplies",
            "message": "what is 6*7?",
            "prior_turns": [{"user": "hi", "assistant": "Hello!"}],
            "flags": {"force_strict": True},
            "user_permissions": ["reminders.view_task"],
            "expect": {"answer_contains": ["42"], "experts": {"names": []}},
        },
        format="json",
    )
    assert case.status_code == 201, case.json()
    body = case.json()
    assert body["expect"]["experts"] == {"match": "set", "names": []}  # stored with its default
    changed = api.patch(
        f"/api/v1/evals/cases/{body['id']}/", {"expect": {"max_model_calls": 3}}, format="json"
    )
    assert changed.json()["expect"] == {"max_model_calls": 3}
    assert api.get(f"/api/v1/evals/suites/{suite['id']}/").json()["case_count"] == 1
    assert api.patch(
        f"/api/v1/evals/suites/{suite['id']}/", {"publish_gate": True}, format="json"
    ).json()["publish_gate"]
    assert api.delete(f"/api/v1/evals/cases/{body['id']}/").status_code == 204
    assert api.delete(f"/api/v1/evals/suites/{suite['id']}/").status_code == 204
    assert api.get("/api/v1/evals/suites/").json() == []


@pytest.mark.parametrize(
    ("body", "details"),
    [
        (
            {"name": "x", "message": "hi", "expect": {"tools_called": ["teleport"]}},
            {"expect": {"tools_called": ["No tool is registered as teleport."]}},
        ),
        (
            {"name": "x", "message": "hi", "expect": {"answer_regex": "("}},
            {
                "expect": {
                    "answer_regex": [
                        "Not a regular expression: missing ), unterminated "
                        "subpattern at position 0."
                    ]
                }
            },
        ),
        ({"name": "x", "message": "  "}, {"message": ["This field may not be blank."]}),
        (
            {"name": "x", "message": "hi", "user_groups": ["ghosts"]},
            {"user_groups": ["Object with name=ghosts does not exist."]},
        ),
        ({"name": "x", "message": 42}, {"message": ["Must be a string."]}),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_a_bad_case_is_a_400_naming_the_field(api, entry_agent, body, details):
    suite = create_suite(api)
    response = api.post(f"/api/v1/evals/suites/{suite['id']}/cases/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"] == details


@pytest.mark.django_db(transaction=True)
def test_two_cases_of_a_suite_cannot_share_a_name(api, entry_agent):
    suite = create_suite(api)
    url = f"/api/v1/evals/suites/{suite['id']}/cases/"
    api.post(url, {"name": "x", "message": "hi"}, format="json")
    again = api.post(url, {"name": "x", "message": "hi"}, format="json")
    assert again.status_code == 400 and "already exists" in str(again.json()["error"]["details"])


@pytest.mark.django_db(transaction=True)
def test_a_run_is_started_and_reported_with_the_diff_against_the_previous(api, entry_agent):
    suite = create_suite(api)
    cases = f"/api/v1/evals/suites/{suite['id']}/cases/"
    case = api.post(
        cases,
        {"name": "adds", "message": "what is 2+2?", "expect": {"answer_contains": ["5"]}},
        format="json",
    ).json()
    first = api.post(f"/api/v1/evals/suites/{suite['id']}/runs/", {}, format="json")
    assert first.status_code == 202 and first.json()["trigger"] == "api"
    api.patch(
        f"/api/v1/evals/cases/{case['id']}/", {"expect": {"answer_contains": ["4"]}}, format="json"
    )
    second = api.post(
        f"/api/v1/evals/suites/{suite['id']}/runs/", {"model": "offline"}, format="json"
    )
    report = api.get(f"/api/v1/evals/runs/{second.json()['id']}/").json()
    assert report["status"] == "finished" and report["succeeded"] is True
    assert report["target"] == "current versions, the offline model"
    assert report["previous_run"] == first.json()["id"]
    assert report["diff"] == [
        {"name": "adds", "before": "failed", "after": "passed", "change": "fixed"}
    ]
    (result,) = report["results"]
    assert result["expectations"][0]["status"] == "pass" and result["cost"] == "0.0000000000"
    assert result["evidence"]["answer"] == "[offline model] 2+2 = 4."
    listed = api.get(f"/api/v1/evals/suites/{suite['id']}/runs/").json()
    assert [r["id"] for r in listed] == [second.json()["id"], first.json()["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"agent_version": 7}, "agent_version"),
        ({"agent": "assistant"}, "agent_version"),
        ({"model": 3}, "model"),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_a_bad_run_request_is_a_400_and_starts_nothing(api, entry_agent, body, field):
    suite = create_suite(api)
    api.post(
        f"/api/v1/evals/suites/{suite['id']}/cases/", {"name": "x", "message": "hi"}, format="json"
    )
    response = api.post(f"/api/v1/evals/suites/{suite['id']}/runs/", body, format="json")
    assert response.status_code == 400 and field in response.json()["error"]["details"]
    assert not EvalRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_empty_suite_cannot_run(api, entry_agent):
    suite = create_suite(api)
    response = api.post(f"/api/v1/evals/suites/{suite['id']}/runs/", {}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "eval_suite_empty"


@pytest.mark.django_db(transaction=True)
def test_cancelling_an_ended_run_changes_nothing(api, entry_agent):
    suite = create_suite(api)
    api.post(
        f"/api/v1/evals/suites/{suite['id']}/cases/", {"name": "x", "message": "hi"}, format="json"
    )
    run = api.post(f"/api/v1/evals/suites/{suite['id']}/runs/", {}, format="json").json()
    cancelled = api.post(f"/api/v1/evals/runs/{run['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "finished"


@pytest.mark.django_db(transaction=True)
def test_evals_are_for_staff_and_missing_objects_are_404(entry_agent, api):
    user = APIClient()
    user.force_authenticate(make_user("alice"))
    assert user.get("/api/v1/evals/suites/").status_code == 403
    assert user.post("/api/v1/evals/suites/", {}, format="json").status_code == 403
    missing = api.get("/api/v1/evals/runs/00000000-0000-0000-0000-000000000000/")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert api.get("/api/v1/evals/drafts/99/").status_code == 404
