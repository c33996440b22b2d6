"""Waiting for a person does not lock the chat: while a turn waits only for an approval or an
answer, the user sends more messages in that session; the parked turn resumes by itself when
the person decides (its tool runs once), and the new turn is unaffected. A turn that really
works still refuses a send, with 409 `turn_in_progress`."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, MessageRole
from delegation.humans.models import InboxItem, ItemStatus
from delegation.models import Run, RunStatus
from delegation.turns import session_snapshot_turns, session_turns
from delegation.turns.parked import is_parked
from tests.fake_openai import text, tool_call
from tests.humans.conftest import agent
from tests.humans.effect_tool import effect_count
from tests.humans.helpers import client, decide, start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    """Enqueued runs run on commit in the calling thread."""
    settings.TASKS_RUN_SYNC = True


@pytest.fixture
def clerk(db, effects):
    """An entry agent whose side-effect tool needs staff approval."""
    return agent("clerk", is_entry=True, tool_keys=["record_effect"], require_approval=True)


def send(api, session_id, text_):
    """POST a message to the session; the response."""
    body = {"id": str(uuid.uuid4()), "text": text_}
    return api.post(f"/api/v1/sessions/{session_id}/messages/", body, format="json")


def answers(session_id):
    """The entry agent's saved answers of the session, in order, with their runs."""
    rows = ChatMessage.objects.filter(
        session_id=session_id, role=MessageRole.AGENT, run__parent__isnull=True
    ).order_by("created_at")
    return [(m.content, m.run_id) for m in rows]


def test_the_user_chats_on_while_a_turn_waits_for_approval_and_both_answer(
    user, staff, team, clerk
):
    team.script(
        "clerk",
        tool_call("record_effect", {"marker": "parked-1"}),
        text("Paris is the capital of France."),  # (the replies in the order they are asked)
        text("Recorded after approval."),
    )
    parked = start(user, "record it please")
    assert parked.status == RunStatus.WAITING_HUMAN
    api = client(user)
    response = send(api, parked.session_id, "meanwhile: what is the capital of France?")
    assert response.status_code == 202, response.json()
    second = Run.objects.get(pk=response.json()["run_id"])
    assert second.status == RunStatus.SUCCEEDED  # ran at once, the first still waits
    parked.refresh_from_db()
    assert parked.status == RunStatus.WAITING_HUMAN
    assert answers(parked.session_id) == [("Paris is the capital of France.", second.id)]

    item = InboxItem.objects.get(run=parked)
    assert decide(client(staff), item.id, decision="approve").status_code == 200
    parked.refresh_from_db()
    assert parked.status == RunStatus.SUCCEEDED
    assert effect_count("parked-1") == 1
    # The late answer is the first turn's (its run), after the second turn's in time.
    assert answers(parked.session_id) == [
        ("Paris is the capital of France.", second.id),
        ("Recorded after approval.", parked.id),
    ]
    second.refresh_from_db()
    assert second.answer == "Paris is the capital of France."


def test_a_send_while_a_turn_really_works_is_409(user, clerk, settings):
    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = "memory://"  # the turn is queued and never advances
    first = start(user, "record it please")
    assert first.status == RunStatus.QUEUED
    response = send(client(user), first.session_id, "and another thing")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "turn_in_progress" and error["message"]
    assert ChatMessage.objects.filter(session_id=first.session_id).count() == 1  # nothing kept


def test_the_snapshot_tells_a_parked_turn_from_a_working_one(user, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": "parked-2"}))
    parked = start(user, "record it please")
    snapshot = session_snapshot_turns(session=parked.session)
    assert snapshot["active_run_id"] is None  # no Stop button, the composer is free
    assert snapshot["waiting_run_ids"] == [str(parked.id)]
    turns = session_turns(session=parked.session)
    assert turns.parked == [parked.id] and turns.running == []


def test_an_expert_waiting_for_a_person_parks_its_callers_turn():
    assert is_parked({RunStatus.WAITING, RunStatus.WAITING_HUMAN})
    assert is_parked({RunStatus.WAITING_HUMAN})
    assert not is_parked({RunStatus.WAITING})  # experts that work
    assert not is_parked({RunStatus.WAITING, RunStatus.WAITING_HUMAN, RunStatus.RUNNING})
    assert not is_parked({RunStatus.WAITING_HUMAN, RunStatus.QUEUED})


def test_cancelling_the_wait_ends_it_plainly_and_nothing_runs(user, staff, team, clerk):
    team.script(
        "clerk",
        tool_call("record_effect", {"marker": "parked-3"}),
        text("Hello again."),
        text("All right, I did not record it."),
    )
    parked = start(user, "record it please")
    api = client(user)
    assert send(api, parked.session_id, "hello").status_code == 202
    item = InboxItem.objects.get(run=parked)
    response = api.post(f"/api/v1/inbox/{item.id}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == ItemStatus.CANCELLED
    parked.refresh_from_db()
    assert parked.status == RunStatus.SUCCEEDED
    assert parked.answer == "All right, I did not record it."
    assert effect_count("parked-3") == 0
    late = decide(client(staff), item.id, decision="approve")
    assert late.status_code == 409 and late.json()["error"]["code"] == "already_decided"
    assert effect_count("parked-3") == 0


def test_trying_again_waits_until_no_turn_is_parked(user, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": "parked-4"}))
    parked = start(user, "record it please")
    response = client(user).post(
        f"/api/v1/sessions/{parked.session_id}/messages/{parked.user_message_id}/regenerate/"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "turn_in_progress"


def test_deleting_the_chat_stops_its_parked_turn(user, team, clerk):
    team.script("clerk", tool_call("record_effect", {"marker": "parked-5"}))
    parked = start(user, "record it please")
    assert client(user).delete(f"/api/v1/sessions/{parked.session_id}/").status_code == 204
    assert not Run.objects.filter(pk=parked.pk).exists()
    assert effect_count("parked-5") == 0
