"""Staff approvals in Slack against a local fake of its Web API: a request waiting for staff
posted with buttons, a linked planner's click deciding it (the turn then answers in its
thread), a team's requests only in its own channel, and clicks that decide nothing: someone
who may not, an unlinked account, a second click, a forged or malformed request."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from chat.channels.models import ChannelLink
from delegation.humans.models import InboxItem, ItemStatus
from delegation.models import Run
from tests.channels.conftest import click_payload, post_click, post_slack, slack_event
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waiting(slack, settings) -> InboxItem:
    """alice asked in Slack for a task; the task expert's tool waits for the Planners, and
    pat (a planner) has linked his Slack account."""
    settings.SLACK_APPROVALS_CHANNEL = "CSTAFF"  # requests for no team: not this one's
    settings.SLACK_APPROVALS_CHANNELS = {"Planners": "CAPPROVE"}
    tasks = make_agent(
        "tasks",
        display_name="Task expert",
        tags=["task"],
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )
    make_agent("assistant", is_entry=True, subagents=[tasks])
    alice = make_user("alice")
    ChannelLink.objects.create(channel="slack", external_id="W111", user=alice)
    pat = make_user("pat", is_staff=True)
    pat.groups.add(Group.objects.get_or_create(name="Planners")[0])
    ChannelLink.objects.create(channel="slack", external_id="WPAT", user=pat)
    post_slack(Client(), slack_event("add a task: buy milk"))
    return InboxItem.objects.get()


def posted(slack) -> dict:
    [message] = [m for m in slack.messages.values() if m["channel"] == "CAPPROVE"]
    return message


def test_a_request_waiting_for_staff_is_posted_with_its_buttons(slack, waiting):
    message = posted(slack)
    assert message["text"] == "Task expert asks to use create_task for alice."
    buttons = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert [(b["action_id"], b.get("value")) for b in buttons] == [
        ("approve", str(waiting.id)),
        ("reject", str(waiting.id)),
        ("inbox", None),
    ]
    assert any("milk" in b.get("text", {}).get("text", "") for b in message["blocks"])


def test_a_planners_click_approves_it_and_the_turn_answers_in_its_thread(client, slack, waiting):
    assert post_click(client, click_payload(waiting.id)).status_code == 200
    waiting.refresh_from_db()
    assert waiting.status == ItemStatus.APPROVED and waiting.decided_by.username == "pat"
    assert Run.objects.get(parent=None).status == "succeeded"
    message = posted(slack)
    assert message["text"].startswith("Approved by pat: Task expert asks") and not message["blocks"]
    [answer] = [m for m in slack.messages.values() if m["channel"] == "C111"]
    assert "milk" in answer["text"]


def test_a_team_without_its_own_channel_keeps_its_requests_in_the_inbox(client, slack, settings):
    settings.SLACK_APPROVALS_CHANNEL = "CSTAFF"
    settings.SLACK_APPROVALS_CHANNELS = {"Finance": "CFIN"}
    tasks = make_agent(
        "tasks",
        tags=["task"],
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )
    make_agent("assistant", is_entry=True, subagents=[tasks])
    ChannelLink.objects.create(channel="slack", external_id="W111", user=make_user("alice"))
    post_slack(client, slack_event("add a task: buy milk"))
    assert InboxItem.objects.get().status == ItemStatus.PENDING
    assert not [m for m in slack.messages.values() if m["channel"] in ("CSTAFF", "CFIN")]


def test_a_reject_click_rejects_it(client, slack, waiting):
    post_click(client, click_payload(waiting.id, action="reject"))
    waiting.refresh_from_db()
    assert waiting.status == ItemStatus.REJECTED
    assert posted(slack)["text"].startswith("Rejected by pat")


def test_someone_who_may_not_decide_is_told_so_and_nothing_is_decided(client, slack, waiting):
    assert post_click(client, click_payload(waiting.id, user="W111")).status_code == 200
    assert InboxItem.objects.get().status == ItemStatus.PENDING
    assert slack.notes == [
        {**slack.notes[0], "user": "W111", "text": "Only staff may decide this request."}
    ]


def test_an_unlinked_account_gets_a_link_and_decides_nothing(client, slack, waiting):
    post_click(client, click_payload(waiting.id, user="WNEW"))
    assert InboxItem.objects.get().status == ItemStatus.PENDING
    [note] = slack.notes
    assert note["user"] == "WNEW" and "https://agents.example.com/channels/link/" in note["text"]


def test_a_second_click_is_told_it_was_decided_first(client, slack, waiting):
    post_click(client, click_payload(waiting.id))
    post_click(client, click_payload(waiting.id, action="reject"))
    assert InboxItem.objects.get().status == ItemStatus.APPROVED
    [note] = slack.notes
    assert "already" in note["text"]


def test_forged_or_malformed_clicks_are_refused_and_decide_nothing(client, slack, waiting):
    assert post_click(client, click_payload(waiting.id), secret="forged").status_code == 403
    assert post_click(client, None, raw=b"payload=%7Bnot+json").status_code == 400
    assert post_click(client, click_payload(waiting.id, action="delete")).status_code == 400
    assert post_click(client, click_payload("not-an-id")).status_code == 400
    assert post_click(client, {"type": "view_submission"}).status_code == 400
    assert InboxItem.objects.get().status == ItemStatus.PENDING and not slack.notes
