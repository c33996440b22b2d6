"""Isolation: eval turns run as sandbox users no one signs in as; they never show in anyone's
chats or usage; side-effect tools act for real inside the case (a task, then its reminder) and
leave nothing behind once the case ends."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from chat.models import ChatMessage, ChatSession
from delegation.evals.models import EvalRun, EvalSandbox
from delegation.evals.sandbox import is_sandbox_user, sandbox_users_q
from delegation.models import Run
from delegation.turns import turn_start
from delegation.usage.models import UsageRecord
from delegation.usage.selectors import usage_report
from reminders.models import Reminder, Task
from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent, make_user
from tests.fake_openai import Team, text, tool_call


@pytest.fixture
def planner(fake_openai, db):
    """An entry agent on the fake server holding the task and reminder tools."""
    return make_agent(
        "planner",
        provider="openai",
        model="fake-model",
        is_entry=True,
        tool_keys=["create_task", "schedule_reminder"],
    )


def script_plan(team: Team) -> None:
    """Create a task ten days ahead, schedule its reminder (it needs the task), answer."""
    day = (timezone.localdate() + timedelta(days=10)).isoformat()
    team.script(
        "planner",
        tool_call("create_task", {"title": "pick up Anna", "date": day, "start": "10:00"}),
        tool_call("schedule_reminder", {"title": "pick up Anna"}),
        text("Task added and reminder set."),
    )


@pytest.mark.django_db(transaction=True)
def test_side_effects_happen_inside_the_case_and_are_gone_after(planner, fake_openai):
    alice = make_user("alice")
    Task.objects.create(user=alice, title="alice's own task", due_date=timezone.localdate())
    script_plan(Team(fake_openai))
    suite = make_suite(planner)
    make_case(
        suite,
        "Pick up Anna in ten days at 10:00 and remind me.",
        expect={"tools_called": ["create_task", "schedule_reminder"]},
    )
    result = run_suite(suite).results.get()
    calls = result.evidence["tool_calls"]
    assert result.status == "passed" and [c["ok"] for c in calls] == [True, True]
    assert '"status": "success"' in calls[1]["result"]  # the reminder found the new task
    assert list(Task.objects.values_list("title", flat=True)) == ["alice's own task"]
    assert not Reminder.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_eval_turns_never_show_in_a_users_chats_or_usage(
    admin_client, admin_user, planner, fake_openai
):
    alice = make_user("alice")
    Team(fake_openai).always["planner"] = lambda body: text("Hello.")
    turn_start(user=alice, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="hi")
    before = {
        "sessions": set(ChatSession.objects.values_list("pk", flat=True)),
        "runs": set(Run.objects.values_list("pk", flat=True)),
        "messages": ChatMessage.objects.count(),
        "usage": set(UsageRecord.objects.values_list("pk", flat=True)),
    }
    suite = make_suite(planner)
    make_case(suite, "hello", expect={"answer_contains": ["Hello"]})
    response = admin_client.post(
        reverse("admin:evals_evalsuite_run", args=[suite.pk]), {"model": ""}
    )
    run = EvalRun.objects.get()
    assert response["Location"] == reverse("admin:evals_evalrun_change", args=[run.pk])
    assert run.succeeded and run.created_by == admin_user
    assert set(ChatSession.objects.values_list("pk", flat=True)) == before["sessions"]
    assert set(Run.objects.values_list("pk", flat=True)) == before["runs"]
    assert ChatMessage.objects.count() == before["messages"]
    for user in (alice, admin_user):
        api = APIClient()
        api.force_authenticate(user)
        assert len(api.get("/api/v1/sessions/").json()["results"]) == (user == alice)
        mine = api.get("/api/v1/usage/mine/").json()["totals"]
        assert sum(row["model_calls"] for row in mine) == (user == alice)
    eval_usage = UsageRecord.objects.exclude(pk__in=before["usage"])
    assert eval_usage.count() == 1 and eval_usage.filter(sandbox_users_q()).count() == 1
    today = timezone.localdate()
    real = usage_report(group_by="user", start=today, end=today)
    assert [row.key for row in real if not row.key.startswith("eval~")] == ["alice"]


@pytest.mark.django_db(transaction=True)
def test_sandbox_users_cannot_sign_in_and_are_reused_wiped(entry_agent, client):
    suite = make_suite(entry_agent)
    make_case(suite, "what is 1+1?", expect={"answer_contains": ["2"]})
    run_suite(suite)
    run_suite(suite)
    sandbox = EvalSandbox.objects.get().user  # one sandbox served both runs, one at a time
    assert is_sandbox_user(sandbox) and sandbox.username.startswith("eval~")
    assert not sandbox.has_usable_password() and not sandbox.email and not sandbox.is_staff
    assert not client.login(username=sandbox.username, password="")
    assert not ChatSession.objects.filter(user=sandbox).exists()
    assert EvalSandbox.objects.get().leased_until is None
    assert get_user_model().objects.filter(sandbox_users_q("")).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_case_runs_with_its_own_rights_not_its_starters(admin_user, fake_openai, db):
    finance_group = Group.objects.create(name="finance")
    finance = make_agent(
        "finance", provider="openai", model="fake-model", access_group=finance_group
    )
    entry = make_agent("assistant", provider="openai", model="fake-model", subagents=[finance])
    team = Team(fake_openai)
    team.always["assistant"] = lambda body: text(
        "no access" if "may not use" in body["messages"][0]["content"] else "asked finance"
    )
    suite = make_suite(entry, pass_threshold=0)
    make_case(
        suite,
        "budget?",
        name="member",
        user_groups=[finance_group],
        expect={"answer_contains": ["asked"]},
    )
    make_case(suite, "budget?", name="outsider", expect={"answer_contains": ["no access"]})
    run = run_suite(suite, user=admin_user)  # a superuser starts it; the cases keep their rights
    assert dict(run.results.values_list("name", "status")) == {
        "member": "passed",
        "outsider": "passed",
    }
