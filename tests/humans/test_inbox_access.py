"""The inbox through every door: an approval deep in the tree surfaces with its path and
resumes only its run; another user's (or another group's) item is invisible everywhere."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from delegation.humans.models import InboxItem
from delegation.models import Run, RunStatus
from tests.factories import make_user
from tests.fake_openai import delegate, text, tool_call
from tests.humans.conftest import agent
from tests.humans.effect_tool import effect_count
from tests.humans.helpers import client, decide, start, tool_results

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


@pytest.fixture
def nested(db, effects):
    """boss → clerk, whose side-effect tool needs the Finance group's approval."""
    clerk = agent(
        "clerk", tool_keys=["record_effect"], require_approval=True, human_group="Finance"
    )
    return agent("boss", is_entry=True, subagents=(clerk,))


def test_an_approval_in_an_expert_surfaces_with_its_path_and_resumes_only_that_run(
    user, staff, team, nested
):
    team.script("boss", delegate("clerk", "record it"), text("Boss: done."))
    team.script("clerk", tool_call("record_effect", {"marker": "nested-1"}), text("Recorded."))
    root = start(user)
    child = Run.objects.get(parent=root)
    assert (root.status, child.status) == (RunStatus.WAITING, RunStatus.WAITING_HUMAN)
    item = InboxItem.objects.get()
    listed = client(staff).get("/api/v1/inbox/").json()["results"]
    assert [row["id"] for row in listed] == [str(item.id)]
    row = listed[0]
    assert row["agent"] == {"name": "clerk", "display_name": "Clerk", "path": ["boss", "clerk"]}
    assert row["on_behalf_of"] == "alice" and row["run_id"] == str(child.id)
    assert (row["tool"], row["arguments"], row["group"]) == (
        "record_effect",
        {"marker": "nested-1"},
        "Finance",
    )
    detail = client(user).get(f"/api/v1/runs/{root.id}/").json()
    assert detail["status"] == "waiting"
    assert detail["children"][0]["status"] == "waiting_human"
    assert detail["children"][0]["waiting_for"] == ["the Finance team"]

    assert decide(client(staff), item.id, decision="approve").status_code == 200
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.answer == "Boss: done."
    assert effect_count("nested-1") == 1
    # Each model call happened once: nothing was re-run from the start.
    assert len(team.requests["clerk"]) == 2 and len(team.requests["boss"]) == 2
    (result,) = tool_results(team.requests["boss"][1])
    assert result["result"]["answer"] == "Recorded."


def test_another_users_or_another_groups_item_is_invisible_through_every_door(
    user, other_user, staff, team, nested
):
    team.script("boss", delegate("clerk", "record it"), text("Boss: done."))
    team.script("clerk", tool_call("record_effect", {"marker": "hidden-1"}), text("Recorded."))
    start(user)
    item = InboxItem.objects.get()
    outsider = make_user("otto", is_staff=True)
    outsider.groups.add(Group.objects.create(name="Legal"))
    for person in (other_user, outsider):
        api = client(person)
        assert api.get("/api/v1/inbox/").json()["results"] == []
        for response in (
            api.get(f"/api/v1/inbox/{item.id}/"),
            decide(api, item.id, decision="approve"),
            api.post(f"/api/v1/inbox/{item.id}/cancel/"),
        ):
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "inbox_item_not_found"
    browser = Client()
    browser.force_login(outsider)
    assert str(item.id) not in browser.get("/inbox/").content.decode()
    assert browser.get(f"/admin/humans/inboxitem/{item.id}/change/").status_code in (302, 403)
    assert effect_count("hidden-1") == 0
    assert client(staff).get(f"/api/v1/inbox/{item.id}/").status_code == 200


def test_the_inbox_page_is_for_staff(user, staff):
    browser = Client()
    browser.force_login(user)
    assert browser.get("/inbox/").status_code == 302  # to the admin login
    browser.force_login(staff)
    page = browser.get("/inbox/")
    assert page.status_code == 200 and b'id="inbox"' in page.content


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "maybe"}, "decision"),
        ({"decision": "approve"}, "answer"),
        ({"decision": "approve", "answer": "   "}, "answer"),
        ({"decision": "modify", "answer": "yes"}, "decision"),
        ({"decision": "approve", "answer": "yes", "arguments": {}}, "arguments"),
        ({"decision": "approve", "answer": 7}, "answer"),
        ({"decision": "approve", "answer": "x" * 4001}, "answer"),
        ({"decision": "reject", "note": "bad\x00"}, "note"),
    ],
)
def test_a_decision_that_does_not_fit_is_refused_with_the_field(user, staff, team, body, field):
    agent("boss", is_entry=True, tool_keys=["ask_human"])
    team.script("boss", tool_call("ask_human", {"question": "Which one?"}))
    start(user)
    item = InboxItem.objects.get()
    response = decide(client(staff), item.id, **body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["details"]
    item.refresh_from_db()
    assert item.status == "pending"
