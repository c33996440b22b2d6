"""Message actions over REST: try again, edit and resend (older branches kept), thumbs up or
down with a note, and content search; never through another user's ids."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession, MessageFeedback
from delegation.models import Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def send(api, sid, text: str) -> dict:
    response = api.post(f"/api/v1/sessions/{sid}/messages/", {"text": text}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()


def answers(sid) -> list[tuple[str, str, bool]]:
    """(role, content, superseded) of every user and agent message, in order."""
    return [
        (m.role, m.content, m.superseded_by is not None)
        for m in ChatMessage.objects.filter(session_id=sid, role__in=["user", "agent"])
    ]


def test_try_again_answers_the_same_message_and_keeps_the_old_answer(api, entry_agent):
    sid = uuid.uuid4()
    first = send(api, sid, "what is 6*7?")
    url = f"/api/v1/sessions/{sid}/messages/{first['message']['id']}/regenerate/"
    again = api.post(url, {}, format="json")
    assert again.status_code == 202, again.json()
    body = again.json()
    assert body["message"]["id"] == first["message"]["id"] and body["duplicate"] is False
    new_run = Run.objects.get(pk=body["run_id"])
    assert new_run.status == RunStatus.SUCCEEDED and new_run.user_message_id == uuid.UUID(
        first["message"]["id"]
    )
    rows = answers(sid)
    assert [r[0] for r in rows] == ["user", "agent", "agent"]
    assert [r[2] for r in rows] == [False, True, False]  # the first answer is an older branch
    old = ChatMessage.objects.get(session_id=sid, role="agent", superseded_by__isnull=False)
    assert old.superseded_by == new_run.id
    # The new turn did not read the replaced answer; the next turn reads only the new one.
    assert new_run.transcript[0] == {"role": "user", "content": "what is 6*7?"}  # no history
    third = send(api, sid, "and 2+2?")
    transcript = Run.objects.get(pk=third["run_id"]).transcript
    history = transcript[: transcript.index({"role": "user", "content": "and 2+2?"})]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["content"] == new_run.answer


def test_edit_sends_a_new_message_and_the_old_branch_stays_in_history(api, entry_agent):
    sid = uuid.uuid4()
    first = send(api, sid, "what is 6*7?")
    send(api, sid, "and 2+2?")
    new_id = uuid.uuid4()
    url = f"/api/v1/sessions/{sid}/messages/{first['message']['id']}/edit/"
    edited = api.post(url, {"id": str(new_id), "text": "what is 6*8?"}, format="json")
    assert edited.status_code == 202, edited.json()
    body = edited.json()
    assert body["message"]["id"] == str(new_id)
    assert body["message"]["edited_from"] == first["message"]["id"]
    run = Run.objects.get(pk=body["run_id"])
    assert run.status == RunStatus.SUCCEEDED and "48" in run.answer
    # The edit is answered from the history before the edited message: nothing after it.
    assert run.transcript[0] == {"role": "user", "content": "what is 6*8?"}
    rows = answers(sid)
    assert [(r[1][:12], r[2]) for r in rows if r[0] == "user"] == [
        ("what is 6*7?", True),
        ("and 2+2?", True),
        ("what is 6*8?", False),
    ]
    assert all(r[2] for r in rows[:4]) and not rows[-1][2]  # the old branch, then the new one
    # Sending the same edit again (a retry) changes nothing.
    again = api.post(url, {"id": str(new_id), "text": "what is 6*8?"}, format="json")
    assert again.status_code == 202 and again.json()["duplicate"] is True
    assert Run.objects.filter(parent__isnull=True).count() == 3
    # The replaced message can no longer be edited or tried again.
    stale = api.post(url, {"text": "what is 6*9?"}, format="json")
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "message_superseded"
    regen = f"/api/v1/sessions/{sid}/messages/{first['message']['id']}/regenerate/"
    assert api.post(regen, {}, format="json").json()["error"]["code"] == "message_superseded"


def test_the_snapshot_marks_branches_and_origins(api, entry_agent):
    from delegation.selectors import session_snapshot

    sid = uuid.uuid4()
    first = send(api, sid, "what is 6*7?")
    api.post(f"/api/v1/sessions/{sid}/messages/{first['message']['id']}/regenerate/", {}, "json")
    messages = session_snapshot(session=ChatSession.objects.get(pk=sid))["messages"]
    agents = [m for m in messages if m["role"] == "agent"]
    assert agents[0]["superseded_by"] and agents[1]["superseded_by"] is None
    assert messages[0]["origin"] == "" and messages[0]["edited_from"] is None


def test_only_user_messages_of_a_finished_turn_can_be_retried_or_edited(api, user, entry_agent):
    sid = uuid.uuid4()
    send(api, sid, "what is 6*7?")
    agent = ChatMessage.objects.get(session_id=sid, role="agent")
    base = f"/api/v1/sessions/{sid}/messages/{agent.id}"
    for response in (
        api.post(f"{base}/regenerate/", {}, format="json"),
        api.post(f"{base}/edit/", {"text": "x"}, format="json"),
    ):
        assert (
            response.status_code == 404 and response.json()["error"]["code"] == "message_not_found"
        )
    user_message = ChatMessage.objects.get(session_id=sid, role="user")
    Run.objects.filter(session_id=sid).update(status=RunStatus.RUNNING)  # a turn still running
    busy = api.post(f"/api/v1/sessions/{sid}/messages/{user_message.id}/regenerate/", {}, "json")
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "turn_in_progress"
    empty = api.post(
        f"/api/v1/sessions/{sid}/messages/{user_message.id}/edit/", {"text": " "}, "json"
    )
    assert empty.status_code == 400


def test_feedback_is_stored_replaced_listed_and_cleared(api, entry_agent, user):
    sid = uuid.uuid4()
    send(api, sid, "what is 6*7?")
    answer = ChatMessage.objects.get(session_id=sid, role="agent")
    url = f"/api/v1/sessions/{sid}/messages/{answer.id}/feedback/"
    up = api.put(url, {"rating": "up"}, format="json")
    assert up.status_code == 200 and up.json() == {
        "message_id": str(answer.id),
        "rating": "up",
        "note": "",
    }
    down = api.put(url, {"rating": "down", "note": "  Wrong: it is 42  "}, format="json")
    assert down.json()["rating"] == "down" and down.json()["note"] == "Wrong: it is 42"
    stored = MessageFeedback.objects.get()
    assert (stored.user, stored.message, stored.rating) == (user, answer, -1)
    listed = api.get(f"/api/v1/sessions/{sid}/feedback/").json()
    assert listed == [{"message_id": str(answer.id), "rating": "down", "note": "Wrong: it is 42"}]
    for bad in (
        {"rating": "meh"},
        {},
        {"rating": "up", "note": 5},
        {"rating": "up", "note": "x" * 2001},
    ):
        response = api.put(url, bad, format="json")
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "invalid"
    user_message = ChatMessage.objects.get(session_id=sid, role="user")
    own_question = f"/api/v1/sessions/{sid}/messages/{user_message.id}/feedback/"
    assert api.put(own_question, {"rating": "up"}, format="json").status_code == 404
    assert api.delete(url).status_code == 204
    assert not MessageFeedback.objects.exists()


def test_another_users_ids_are_404_for_every_action(api, mallory_api, entry_agent, other_user):
    sid = uuid.uuid4()
    first = send(api, sid, "what is 6*7?")
    answer = ChatMessage.objects.get(session_id=sid, role="agent")
    mid = first["message"]["id"]
    base = f"/api/v1/sessions/{sid}"
    for response in (
        mallory_api.post(f"{base}/messages/{mid}/regenerate/", {}, format="json"),
        mallory_api.post(f"{base}/messages/{mid}/edit/", {"text": "mine"}, format="json"),
        mallory_api.put(f"{base}/messages/{answer.id}/feedback/", {"rating": "down"}, "json"),
        mallory_api.delete(f"{base}/messages/{answer.id}/feedback/"),
        mallory_api.get(f"{base}/feedback/"),
    ):
        assert response.status_code == 404, response.json()
        assert response.json()["error"]["code"] in ("session_not_found", "message_not_found")
    # Her own session with alice's message id: still not found.
    theirs = ChatSession.objects.create(id=uuid.uuid4(), user=other_user, title="mine")
    response = mallory_api.post(
        f"/api/v1/sessions/{theirs.id}/messages/{mid}/regenerate/", {}, format="json"
    )
    assert response.status_code == 404
    assert mallory_api.get("/api/v1/sessions/search/?q=6*7").json() == {"results": []}
    assert Run.objects.filter(parent__isnull=True).count() == 1
    assert not MessageFeedback.objects.exists()


def test_search_finds_words_said_in_chats_not_only_titles(api, mallory_api, user, other_user):
    plans = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="Weekend")
    ChatMessage.objects.create(
        id=uuid.uuid4(), session=plans, role="user", content="Pick up Mum at the AIRPORT at 9"
    )
    ChatMessage.objects.create(
        id=uuid.uuid4(), session=plans, role="tool", content="airport tool output"
    )
    chinese = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="Airport runs")
    ChatMessage.objects.create(
        id=uuid.uuid4(), session=chinese, role="agent", content="週末去機場接人"
    )
    secret = ChatSession.objects.create(id=uuid.uuid4(), user=other_user, title="airport secret")
    ChatMessage.objects.create(id=uuid.uuid4(), session=secret, role="user", content="airport")

    hits = api.get("/api/v1/sessions/search/", {"q": "airport"}).json()["results"]
    assert {h["title"] for h in hits} == {"Weekend", "Airport runs"}
    weekend = next(h for h in hits if h["title"] == "Weekend")
    assert "AIRPORT" in weekend["snippet"]
    assert next(h for h in hits if h["title"] == "Airport runs")["snippet"] == ""
    found = api.get("/api/v1/sessions/search/", {"q": "機場"}).json()["results"]
    assert [h["title"] for h in found] == ["Airport runs"] and "機場" in found[0]["snippet"]
    assert api.get("/api/v1/sessions/search/").status_code == 400
    assert api.get("/api/v1/sessions/search/", {"q": "x" * 201}).status_code == 400
    nul = api.get("/api/v1/sessions/search/", {"q": "a\x00b"})
    assert nul.status_code == 400 and "q" in nul.json()["error"]["details"]


def test_trying_again_twice_keeps_both_earlier_answers_under_the_latest_turn(api, entry_agent):
    sid = uuid.uuid4()
    first = send(api, sid, "what is 6*7?")
    url = f"/api/v1/sessions/{sid}/messages/{first['message']['id']}/regenerate/"
    api.post(url, {}, format="json")
    latest = api.post(url, {}, format="json").json()["run_id"]
    old = ChatMessage.objects.filter(session_id=sid, role="agent", superseded_by__isnull=False)
    assert old.count() == 2 and {m.superseded_by for m in old} == {uuid.UUID(latest)}
    assert ChatMessage.objects.filter(session_id=sid, role="agent", superseded_by=None).count() == 1
