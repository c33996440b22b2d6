"""Bad websocket input: each gets a clear error, the socket stays usable, nothing is lost."""

from __future__ import annotations

import uuid

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser, Group

from chat.models import ChatMessage, ChatSession
from config.asgi import application
from delegation.models import Run, RunStatus
from tests.chat.helpers import connect, events_until, send_frame
from tests.fake_openai import error
from tests.waiting import in_process_tasks_done

pytestmark = pytest.mark.django_db(transaction=True)


async def expect_error(ws, code: str) -> dict:
    event = await ws.receive_json_from(timeout=5)
    assert event["type"] == "error", event
    assert event["data"]["code"] == code, event
    assert event["data"]["message"]
    return event


async def still_usable(ws) -> None:
    await ws.send_json_to(send_frame("still there?"))
    events = await events_until(ws)
    assert events[-1]["data"]["status"] == "succeeded"


async def test_anonymous_socket_is_accepted_then_closed_with_4401():
    communicator = WebsocketCommunicator(
        application, "/ws/chat/", headers=[(b"origin", b"http://localhost")]
    )
    communicator.scope["user"] = AnonymousUser()
    connected, _ = await communicator.connect()  # refused at the handshake = HTTP 403
    assert connected
    assert await communicator.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 4401,
    }
    await communicator.send_to(text_data='{"type": "session.join"}')  # a late frame: ignored
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


async def test_foreign_origin_is_refused():
    communicator = WebsocketCommunicator(
        application, "/ws/chat/", headers=[(b"origin", b"http://evil.example")]
    )
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "bad_json"),
        ('{"type": "launch.missiles"}', "unknown_type"),
        ('{"type": "message.send", "message_id": "x"}', "invalid"),
    ],
)
async def test_malformed_frames_get_an_error_and_the_socket_stays_usable(
    user, entry_agent, raw, code
):
    ws = await connect(user)
    await ws.send_to(text_data=raw)
    await expect_error(ws, code)
    await still_usable(ws)
    await ws.disconnect()


async def test_binary_frame_is_refused(user, entry_agent):
    ws = await connect(user)
    await ws.send_to(bytes_data=b"\x00\x01")
    await expect_error(ws, "bad_frame")
    await ws.disconnect()


@pytest.mark.parametrize("field", ["session_id", "message_id"])
async def test_missing_or_non_uuid_ids_name_the_field(user, entry_agent, field):
    ws = await connect(user)
    for bad in (None, "not-a-uuid", 12):
        frame = send_frame()
        if bad is None:
            del frame[field]
        else:
            frame[field] = bad
        await ws.send_json_to(frame)
        event = await expect_error(ws, "invalid")
        assert field in event["data"]["details"]
    assert await _count(ChatMessage) == 0
    await ws.disconnect()


async def test_text_must_be_a_non_empty_string(user, entry_agent):
    ws = await connect(user)
    await ws.send_json_to({**send_frame(), "text": 5})
    await expect_error(ws, "invalid")
    await ws.send_json_to(send_frame("   "))
    await expect_error(ws, "empty_message")
    await ws.disconnect()


async def test_text_over_the_limit_is_refused_and_nothing_is_stored(user, entry_agent, settings):
    settings.CHAT_MAX_MESSAGE_CHARS = 100
    ws = await connect(user)
    frame = send_frame("x" * 101)
    await ws.send_json_to(frame)
    event = await expect_error(ws, "message_too_long")
    assert event["data"]["message_id"] == frame["message_id"]  # the client can keep its draft
    assert await _count(ChatMessage) == 0 and await _count(ChatSession) == 0
    await ws.send_json_to(send_frame("x" * 100))
    assert (await events_until(ws))[-1]["data"]["status"] == "succeeded"
    await ws.disconnect()


async def test_frame_over_the_hard_limit_is_refused_unparsed(user, entry_agent, settings):
    settings.WS_MAX_FRAME_BYTES = 1000
    ws = await connect(user)
    await ws.send_json_to(send_frame("y" * 2000))
    await expect_error(ws, "frame_too_large")
    await still_usable(ws)
    await ws.disconnect()


async def test_another_users_session_is_refused_exactly_like_a_missing_one(
    user, other_user, entry_agent
):
    theirs = await database_sync_to_async(ChatSession.objects.create)(
        id=uuid.uuid4(), user=other_user, title="private"
    )
    ws = await connect(user)
    await ws.send_json_to({"type": "session.join", "session_id": str(theirs.id)})
    foreign = await expect_error(ws, "session_not_found")
    await ws.send_json_to({"type": "session.join", "session_id": str(uuid.uuid4())})
    missing = await expect_error(ws, "session_not_found")
    assert foreign["data"]["message"] == missing["data"]["message"]
    await ws.send_json_to(send_frame("let me in", session_id=theirs.id))
    await expect_error(ws, "session_not_found")
    assert await _count(ChatMessage, session=theirs) == 0
    await ws.disconnect()


async def test_another_users_events_never_reach_me(user, other_user, entry_agent):
    alice, mallory = await connect(user), await connect(other_user)
    frame = send_frame("alice's secret")
    await mallory.send_json_to({"type": "session.join", "session_id": frame["session_id"]})
    await expect_error(mallory, "session_not_found")
    await alice.send_json_to(frame)
    await events_until(alice)
    assert await mallory.receive_nothing(timeout=0.3)
    await alice.disconnect()
    await mallory.disconnect()


async def test_message_id_of_another_user_is_a_conflict(user, other_user, entry_agent):
    alice, mallory = await connect(user), await connect(other_user)
    frame = send_frame("mine")
    await alice.send_json_to(frame)
    await events_until(alice)
    await mallory.send_json_to({**frame, "session_id": str(uuid.uuid4())})
    await expect_error(mallory, "message_id_conflict")
    assert await _count(ChatMessage, id=frame["message_id"]) == 1
    await alice.disconnect()
    await mallory.disconnect()


async def test_second_message_while_a_turn_runs_is_refused_and_kept_for_retry(user, entry_agent):
    ws = await connect(user)
    first = send_frame("first")
    await ws.send_json_to(first)
    await events_until(ws)
    await database_sync_to_async(
        lambda: Run.objects.filter(session_id=first["session_id"]).update(status=RunStatus.RUNNING)
    )()
    second = send_frame("second", session_id=first["session_id"])
    await ws.send_json_to(second)
    await expect_error(ws, "turn_in_progress")
    assert await _count(ChatMessage, id=second["message_id"]) == 0
    await ws.disconnect()


async def test_cancelling_another_users_run_is_not_found(user, other_user, entry_agent):
    alice, mallory = await connect(user), await connect(other_user)
    await alice.send_json_to(send_frame("hi"))
    events = await events_until(alice)
    await mallory.send_json_to({"type": "run.cancel", "run_id": events[0]["run_id"]})
    await expect_error(mallory, "run_not_found")
    await alice.disconnect()
    await mallory.disconnect()


async def test_no_entry_agent_is_explained(user):
    ws = await connect(user)
    await ws.send_json_to(send_frame())
    await expect_error(ws, "no_entry_agent")
    await ws.disconnect()


async def test_entry_agent_closed_to_the_user_is_forbidden(user, entry_agent):
    group = await database_sync_to_async(Group.objects.create)(name="staff-only")
    entry_agent.access_group = group
    await database_sync_to_async(entry_agent.save)()
    ws = await connect(user)
    await ws.send_json_to(send_frame())
    await expect_error(ws, "agent_forbidden")
    await ws.disconnect()


async def test_model_error_reaches_the_user_as_error_event_and_plain_message(
    user, openai_entry_agent, fake_openai
):
    fake_openai.script(error(503))
    ws = await connect(user)
    await ws.send_json_to(send_frame("hello"))
    events = await events_until(ws)
    err = next(e for e in events if e["type"] == "error")
    assert err["data"]["code"] == "model_unavailable" and err["agent"]["name"] == "assistant"
    failure = next(e for e in events if e["type"] == "message.completed")
    assert failure["data"]["status"] == "failed" and failure["data"]["text"].startswith("Sorry")
    assert events[-1]["data"]["status"] == "failed"
    await still_usable_after_model_recovers(ws, fake_openai)
    await ws.disconnect()


async def still_usable_after_model_recovers(ws, fake_openai):
    from tests.fake_openai import text

    fake_openai.script(text("back"))
    await still_usable(ws)


async def test_invalid_timezone_is_refused(user, entry_agent):
    ws = await connect(user)
    await ws.send_json_to({**send_frame(), "timezone": "Mars/Olympus"})
    await expect_error(ws, "invalid_timezone")
    await ws.disconnect()


async def test_user_can_stop_a_running_turn(user, entry_agent, settings):
    settings.OFFLINE_MODEL_DELAY_MS = 50  # a slow answer, so there is time to press stop
    ws = await connect(user)
    await ws.send_json_to(send_frame("tell me something long"))
    created = await ws.receive_json_from(timeout=5)
    before = [created]
    while before[-1]["type"] != "message.delta":  # press stop mid-answer
        before.append(await ws.receive_json_from(timeout=5))
    await ws.send_json_to({"type": "run.cancel", "run_id": created["run_id"]})
    events = before + await events_until(ws)
    assert events[-1]["data"]["status"] == "cancelled"
    await in_process_tasks_done()  # the worker noticed the stop and ended its task
    leftovers_seen = []
    while not await ws.receive_nothing(timeout=0.1):
        leftovers_seen.append(await ws.receive_json_from())  # in flight when stop was pressed
    assert await ws.receive_nothing(timeout=0.5)  # then nothing more streams
    run = await database_sync_to_async(Run.objects.get)(pk=created["run_id"])
    assert run.status == RunStatus.CANCELLED
    statuses = await database_sync_to_async(
        lambda: set(run.messages.values_list("status", flat=True))
    )()
    assert "streaming" not in statuses
    shown = "".join(
        e["data"]["text"] for e in events + leftovers_seen if e["type"] == "message.delta"
    )
    saved = await database_sync_to_async(lambda: run.messages.get(status="cancelled").content)()
    assert shown and saved.startswith(shown)  # every word the user saw is kept
    await ws.disconnect()


async def _count(model, **filters) -> int:
    return await database_sync_to_async(lambda: model.objects.filter(**filters).count())()


SEND_WITH_A_LONE_SURROGATE = (
    f'{{"type": "message.send", "session_id": "{uuid.uuid4()}", '
    f'"message_id": "{uuid.uuid4()}", "text": "hi \\udc00"}}'
)


@pytest.mark.parametrize(
    "text_data",
    [
        '{"type": "\\ud800"}',  # echoed back in the error, it used to kill the socket
        SEND_WITH_A_LONE_SURROGATE,
    ],
)
async def test_lone_surrogates_are_a_bad_frame_and_the_socket_stays(user, entry_agent, text_data):
    ws = await connect(user)
    await ws.send_to(text_data=text_data)
    event = await expect_error(ws, "bad_json")
    assert "Unicode" in event["data"]["message"]
    assert await ChatMessage.objects.acount() == 0
    await still_usable(ws)
    await ws.disconnect()
