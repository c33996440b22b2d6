"""The activity log shows a staff member what the inbox, the reviews and the knowledge would:
rows quoting a restricted knowledge base only to its readers, another group's approval requests
only to that group, a user's question to themselves to nobody else; the list, the CSV export
and the admin page alike."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.test import Client

from agents.knowledge.services import document_upload, knowledge_base_create
from delegation.humans.models import Activity, Audience, InboxItem
from tests.factories import grant, make_user
from tests.fake_openai import delegate, text, tool_call
from tests.humans.conftest import agent
from tests.humans.helpers import client, decide, start

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "The chief executive earns 900000 dollars a year."


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


def log_reader(name: str, *groups: str, **fields) -> object:
    """A staff member who may view the activity log, in these groups."""
    member = grant(make_user(name, is_staff=True, **fields), "humans.view_activity")
    for group in groups:
        member.groups.add(Group.objects.get_or_create(name=group)[0])
    return member


def seen(reader) -> list[dict]:
    """The activity rows the reader gets from the API."""
    return client(reader).get("/api/v1/activity/").json()["results"]


def exported(reader) -> str:
    """The CSV export the reader gets."""
    response = client(reader).get("/api/v1/activity/export/", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200
    return response.content.decode()


def admin_page(reader) -> str:
    """The admin's activity list as the reader sees it."""
    browser = Client()
    browser.force_login(reader)
    page = browser.get("/admin/humans/activity/")
    assert page.status_code == 200
    return page.content.decode()


def salary_turn(user, team) -> None:
    """boss asks hr, which quotes the restricted "salaries" knowledge base in its answer."""
    readers = Group.objects.get_or_create(name="hr-readers")[0]
    user.groups.add(readers)
    hr = agent("hr")
    agent("boss", is_entry=True, subagents=(hr,))
    kb = knowledge_base_create(name="salaries", access_group=readers, agents=[hr])
    document_upload(
        kb=kb, filename="pay.md", data=f"# Pay\n\n{SECRET}\n".encode(), background=False
    )
    team.script("boss", delegate("hr", "What does the CEO earn?"), text("Ask HR."))
    team.script("hr", tool_call("kb_search", {"query": "chief executive earns"}), text(SECRET))
    start(user)


def test_a_restricted_passage_quoted_in_a_summary_is_shown_only_to_its_readers(user, team):
    salary_turn(user, team)
    answered = Activity.objects.get(kind="delegation_answered")
    assert SECRET[:40] in answered.summary  # what the log would leak
    outsider = log_reader("otto")
    reader = log_reader("rita", "hr-readers")

    hidden = seen(outsider)
    assert [r["kind"] for r in hidden] == ["delegation_asked"]  # the boss's question only
    assert SECRET[:40] not in str(hidden) and SECRET[:40] not in exported(outsider)
    assert SECRET[:40] not in admin_page(outsider)
    browser = Client()
    browser.force_login(outsider)
    assert browser.get(f"/admin/humans/activity/{answered.pk}/change/").status_code == 302

    shown = seen(reader)
    assert {r["kind"] for r in shown} == {"delegation_asked", "delegation_answered"}
    assert SECRET[:40] in str(shown) and SECRET[:40] in exported(reader)
    assert SECRET[:40] in admin_page(reader)
    browser.force_login(reader)
    assert browser.get(f"/admin/humans/activity/{answered.pk}/change/").status_code == 200
    root = log_reader("root", is_superuser=True)
    assert len(seen(root)) == 2


def test_another_groups_approval_requests_are_left_out(user, team, effects):
    clerk = agent(
        "clerk", tool_keys=["record_effect"], require_approval=True, human_group="Finance"
    )
    agent("boss", is_entry=True, subagents=(clerk,))
    team.script("boss", delegate("clerk", "record it"), text("Boss: done."))
    team.script("clerk", tool_call("record_effect", {"marker": "scope-1"}), text("Recorded."))
    start(user)
    requested = Activity.objects.get(kind="approval_requested")
    assert requested.group == "Finance"
    finance = log_reader("fiona", "Finance")
    legal = log_reader("larry", "Legal")
    assert (
        decide(client(finance), InboxItem.objects.get().id, decision="approve").status_code == 200
    )

    legal_kinds = {r["kind"] for r in seen(legal)}
    assert legal_kinds == {"delegation_asked"}  # the boss's; nothing of the Finance agent's
    assert "record_effect" not in exported(legal) and "record_effect" not in admin_page(legal)
    finance_kinds = {r["kind"] for r in seen(finance)}
    assert {"approval_requested", "approval_decided", "tool_executed"} <= finance_kinds
    assert "asks to run record_effect" in exported(finance)
    assert {"approval_requested", "approval_decided"} <= {
        r["kind"] for r in seen(log_reader("root", is_superuser=True))
    }


def test_a_users_question_to_themselves_is_theirs_alone(user, team):
    agent("boss", is_entry=True, tool_keys=["ask_user"])
    team.script("boss", tool_call("ask_user", {"question": "Which hospital treats you?"}))
    start(user)
    raised = Activity.objects.get(kind="escalation_raised")
    assert raised.audience == Audience.USER and raised.user == user
    for other in (log_reader("stan"), log_reader("root", is_superuser=True)):
        assert seen(other) == [] and "hospital" not in exported(other)
        assert "hospital" not in admin_page(other)
    user.is_staff = True  # (only staff read the log, as only staff enter the admin)
    user.save()
    grant(user, "humans.view_activity")
    assert [r["kind"] for r in seen(user)] == ["escalation_raised"]


def test_rows_written_before_the_scope_get_it_from_their_run_item_and_knowledge(user, team):
    salary_turn(user, team)
    rows = Activity.objects.all()
    rows.update(group="", audience=Audience.STAFF)
    for row in rows:
        row.knowledge.clear()
    assert SECRET[:40] in str(seen(log_reader("otto")))  # unscoped, as rows were before
    migration = import_module("delegation.humans.migrations.0002_activity_scope")
    migration.scope_existing_rows(apps, None)
    answered = Activity.objects.get(kind="delegation_answered")
    assert [kb.name for kb in answered.knowledge.all()] == ["salaries"]
    assert SECRET[:40] not in str(seen(log_reader("olga")))


def test_rows_written_before_the_scope_get_their_items_audience(user, team):
    agent("boss", is_entry=True, tool_keys=["ask_user"])
    team.script("boss", tool_call("ask_user", {"question": "Which hospital treats you?"}))
    start(user)
    Activity.objects.update(audience=Audience.STAFF)
    import_module("delegation.humans.migrations.0002_activity_scope").scope_existing_rows(
        apps, None
    )
    assert Activity.objects.get(kind="escalation_raised").audience == Audience.USER
    assert seen(log_reader("stan")) == []
