"""The review queue end to end: a flagged answer is queued with its question, tree, issue and
citations; a reviewer marks it correct, wrong or fixed (the fix reaches the user's chat from
"Reviewer", live and on replay); the first review wins; others' reviews are invisible."""

from __future__ import annotations

import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group

from chat.models import ChatMessage
from delegation.humans.models import Review
from tests.chat.helpers import connect
from tests.factories import grant, make_user
from tests.fake_openai import delegate, text
from tests.humans.conftest import agent
from tests.humans.helpers import client, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


@pytest.fixture
def reviewer(staff):
    """The Finance staff member, who may view and decide reviews (as the admin asks) and see
    the agents' states."""
    return grant(staff, "humans.view_review", "humans.change_review", "agents.view_agent")


def flagged_turn(user, team, group: str = "Finance"):
    """A turn whose expert answer was too short: passed on low confidence, queued for review."""
    fin = agent(
        "fin",
        validate_answers="rules",
        answer_min_chars=20,
        fallback_chain=["low_confidence"],
        human_group=group,
    )
    agent("boss", is_entry=True, subagents=(fin,))
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: maybe 60k."))
    team.script("fin", text("60k?"))
    return start(user, "What is the Q3 budget?")


def test_a_flagged_answer_is_queued_with_its_question_tree_and_issue(user, reviewer, team):
    root = flagged_turn(user, team)
    listed = client(reviewer).get("/api/v1/reviews/").json()["results"]
    assert len(listed) == 1
    review = listed[0]
    assert review["question"] == "What is the Q3 budget?"
    assert review["answer"] == "Boss: maybe 60k." and review["agent_name"] == "fin"
    assert "at least 20 are expected" in review["issue"]
    assert review["run_id"] == str(root.id) and review["on_behalf_of"] == "alice"
    tree = review["tree"]
    assert [(r["agent"], r["depth"]) for r in tree] == [("boss", 0), ("fin", 1)]
    assert tree[1]["validation"]["outcome"] == "low_confidence"
    states = {row["name"]: row for row in client(reviewer).get("/api/v1/agent-states/").json()}
    assert states["fin"]["quality"]["invalid"] == 1 and states["fin"]["quality"]["pending"] == 1


async def test_a_fixed_review_sends_the_corrected_answer_to_the_users_chat(user, reviewer, team):
    root = await database_sync_to_async(flagged_turn)(user, team)
    review = await database_sync_to_async(Review.objects.get)()
    ws = await connect(user)
    await ws.send_json_to({"type": "session.join", "session_id": str(root.session_id)})
    assert (await ws.receive_json_from(timeout=5))["type"] == "session.snapshot"
    api = await sync_to_async(client)(reviewer)
    response = await sync_to_async(api.post)(
        f"/api/v1/reviews/{review.id}/decision/",
        {"status": "fixed", "corrected_answer": "The Q3 budget is 60,000 dollars."},
        format="json",
    )
    assert response.status_code == 200 and response.json()["status"] == "fixed"
    started = await ws.receive_json_from(timeout=5)
    completed = await ws.receive_json_from(timeout=5)
    assert started["type"] == "message.started"
    assert completed["type"] == "message.completed"
    assert completed["agent"]["display_name"] == "Reviewer"
    assert completed["data"]["text"] == "The Q3 budget is 60,000 dollars."
    await ws.send_json_to({"type": "session.join", "session_id": str(root.session_id)})
    snapshot = await ws.receive_json_from(timeout=5)
    last = snapshot["data"]["messages"][-1]
    assert last["id"] == str(uuid.uuid5(review.id, "followup"))
    assert (last["agent"]["display_name"], last["content"]) == (
        "Reviewer",
        "The Q3 budget is 60,000 dollars.",
    )
    await ws.disconnect()
    again = await sync_to_async(api.post)(
        f"/api/v1/reviews/{review.id}/decision/", {"status": "correct"}, format="json"
    )
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_decided"
    count = await database_sync_to_async(
        ChatMessage.objects.filter(agent__display_name="Reviewer").count
    )()
    assert count == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "wrong"}, "note"),
        ({"status": "fixed"}, "corrected_answer"),
        ({"status": "fixed", "corrected_answer": "  "}, "corrected_answer"),
        ({"status": "pending"}, "status"),
        ({"status": "correct", "note": 5}, "note"),
    ],
)
def test_a_review_that_does_not_fit_is_refused(user, reviewer, team, body, field):
    flagged_turn(user, team)
    review = Review.objects.get()
    response = client(reviewer).post(f"/api/v1/reviews/{review.id}/decision/", body, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["details"]
    review.refresh_from_db()
    assert review.status == "pending"


def test_wrong_with_a_note_counts_in_the_agents_quality(user, reviewer, team):
    flagged_turn(user, team)
    review = Review.objects.get()
    response = client(reviewer).post(
        f"/api/v1/reviews/{review.id}/decision/",
        {"status": "wrong", "note": "The budget is 80k."},
        format="json",
    )
    assert response.status_code == 200 and response.json()["reviewed_by"] == "stella"
    states = {row["name"]: row for row in client(reviewer).get("/api/v1/agent-states/").json()}
    assert states["fin"]["quality"]["wrong"] == 1 and states["fin"]["quality"]["pending"] == 0
    assert not ChatMessage.objects.filter(agent__display_name="Reviewer").exists()


def test_another_groups_review_is_invisible_and_users_may_not_review(user, other_user, team):
    flagged_turn(user, team, group="Finance")
    review = Review.objects.get()
    outsider = make_user("otto", is_staff=True)
    outsider.groups.add(Group.objects.create(name="Legal"))
    api = client(grant(outsider, "humans.view_review", "humans.change_review"))
    assert api.get("/api/v1/reviews/").json()["results"] == []
    for response in (
        api.get(f"/api/v1/reviews/{review.id}/"),
        api.post(f"/api/v1/reviews/{review.id}/decision/", {"status": "correct"}, format="json"),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "review_not_found"
    for person in (user, other_user):  # the asker included: reviews are for staff
        response = client(person).get(f"/api/v1/reviews/{review.id}/")
        assert response.status_code == 403
