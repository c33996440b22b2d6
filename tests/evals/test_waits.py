"""Eval turns that wait for a person: the case decides (approve with its answer, or reject by
default), staff never see nor hear of the item, and the result says why the case waited."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from delegation.evals.sandbox import sandbox_acquire
from delegation.humans.models import InboxItem
from delegation.models import RunStatus
from delegation.turns import turn_start
from reminders.models import Task
from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent, make_user
from tests.fake_openai import Team, text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gated(fake_openai, db):
    """An entry agent on the fake server whose create_task waits for staff approval."""
    return make_agent(
        "gated",
        provider="openai",
        model="fake-model",
        is_entry=True,
        tool_keys=["create_task"],
        require_approval=True,
    )


def script(team: Team, closing: str) -> None:
    team.script(
        "gated",
        tool_call("create_task", {"title": "call Ana"}),
        text(closing),
    )


def test_a_case_that_approves_runs_the_tool_and_says_why_it_waited(gated, fake_openai):
    script(Team(fake_openai), "Created the task.")
    suite = make_suite(gated)
    make_case(suite, "add a task: call Ana", expect={"human": {"decision": "approve"}})
    run = run_suite(suite)
    (result,) = run.results.all()
    assert result.status == "passed", (result.error, result.expectations)
    waits = result.evidence["waits"]
    assert waits == [
        {"wait": "waited for staff approval of create_task", "decision": "approved", "detail": ""}
    ]
    (human,) = [o for o in result.expectations if o["key"] == "human"]
    assert human["status"] == "pass"
    assert result.evidence["tool_calls"][0]["ok"] is True  # the tool ran, in the sandbox
    assert not Task.objects.exists()  # …and nothing outlived the case
    assert not InboxItem.objects.exists()


def test_without_a_decision_the_case_rejects_and_nothing_runs(gated, fake_openai):
    script(Team(fake_openai), "The task was not created.")
    suite = make_suite(gated)
    make_case(suite, "add a task: call Ana", expect={"answer_contains": ["not created"]})
    run = run_suite(suite)
    (result,) = run.results.all()
    assert result.status == "passed", (result.error, result.expectations)
    assert result.evidence["waits"][0]["decision"] == "rejected"
    assert result.evidence["tool_calls"][0]["ok"] is False


def test_a_case_expecting_a_wait_fails_when_the_turn_never_waits(fake_openai, db):
    agent = make_agent("free", provider="openai", model="fake-model", is_entry=True)
    Team(fake_openai).script("free", text("Hi."))
    suite = make_suite(agent)
    make_case(suite, "hello", expect={"human": {"decision": "approve"}})
    (result,) = run_suite(suite).results.all()
    assert result.status == "failed"
    (human,) = result.expectations
    assert human["detail"] == "the turn never waited for a person"


def test_staff_never_see_an_eval_turns_item(gated, fake_openai, settings):
    settings.TASKS_RUN_SYNC = True
    Team(fake_openai).script("gated", tool_call("create_task", {"title": "call Ana"}))
    sandbox = sandbox_acquire(seconds=60, profile={})
    sent = turn_start(user=sandbox, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="x")
    sent.run.refresh_from_db()
    assert sent.run.status == RunStatus.WAITING_HUMAN
    item = InboxItem.objects.get(run=sent.run)
    boss = make_user("boss", is_staff=True, is_superuser=True)
    api = APIClient()
    api.force_authenticate(boss)
    assert api.get("/api/v1/inbox/").json()["results"] == []
    assert api.get(f"/api/v1/inbox/{item.id}/").status_code == 404
    page = APIClient()
    page.force_login(boss)
    assert str(item.id) not in page.get("/inbox/").content.decode()
