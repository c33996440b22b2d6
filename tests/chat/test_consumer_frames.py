"""Hostile websocket frames: every bad frame gets a clear code (never `internal_error`), is logged
at warning without a traceback, and sends share REST's "send" throttle."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from chat.models import ChatMessage
from tests.chat.helpers import connect, events_until, send_frame

pytestmark = pytest.mark.django_db(transaction=True)


async def first_error(ws) -> dict:
    event = await ws.receive_json_from(timeout=5)
    assert event["type"] == "error", event
    return event["data"]


def no_tracebacks(caplog) -> None:
    noisy = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not noisy, [r.getMessage() for r in noisy]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ('{"type": ["message.send"]}', "bad_frame"),
        ('{"type": {"a": 1}}', "bad_frame"),
        ('{"type": 7}', "bad_frame"),
        ('{"type": null}', "bad_frame"),
        ("[" * 100_000 + "]" * 100_000, "bad_json"),
        ('{"a":' * 50_000 + "1" + "}" * 50_000, "bad_json"),
        ('"just a string"', "bad_json"),
    ],
    ids=["type-list", "type-dict", "type-int", "type-null", "deep-list", "deep-object", "str"],
)
async def test_a_malformed_frame_gets_a_clear_code_and_a_warning(
    user, entry_agent, settings, caplog, raw, code
):
    settings.WS_MAX_FRAME_BYTES = 1_000_000
    caplog.set_level(logging.WARNING)
    ws = await connect(user)
    await ws.send_to(text_data=raw)
    error = await first_error(ws)
    assert error["code"] == code and error["message"]
    assert error["request_type"] is None or isinstance(error["request_type"], str)
    assert any(r.levelno == logging.WARNING and r.name == "chat.consumers" for r in caplog.records)
    no_tracebacks(caplog)
    await ws.send_json_to(send_frame("still there?"))
    assert (await events_until(ws))[-1]["data"]["status"] == "succeeded"
    await ws.disconnect()


async def test_nul_in_the_message_is_refused_as_invalid_and_nothing_is_stored(user, entry_agent):
    ws = await connect(user)
    await ws.send_json_to(send_frame("hello\x00world"))
    error = await first_error(ws)
    assert error["code"] == "invalid" and "NUL" in error["message"]
    assert await database_sync_to_async(ChatMessage.objects.count)() == 0
    await ws.disconnect()


async def test_websocket_sends_share_the_rest_send_throttle(user, entry_agent, monkeypatch):
    rates = {**SimpleRateThrottle.THROTTLE_RATES, "send": "3/minute"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
    api = APIClient()
    api.force_authenticate(user)
    sent = await database_sync_to_async(api.post)(
        f"/api/v1/sessions/{uuid.uuid4()}/messages/",
        {"id": str(uuid.uuid4()), "text": "over REST"},
        format="json",
    )
    assert sent.status_code == 202
    ws = await connect(user)
    for text in ("one", "two"):
        await ws.send_json_to(send_frame(text))
        await events_until(ws)
    refused = send_frame("three is too many")
    await ws.send_json_to(refused)
    error = await first_error(ws)
    assert error["code"] == "throttled"
    assert 0 < error["details"]["retry_after"] <= 60 and "retry" in error["message"].lower()
    assert error["message_id"] == refused["message_id"]  # the page keeps the draft for later
    assert not await database_sync_to_async(
        ChatMessage.objects.filter(pk=refused["message_id"]).exists
    )()
    await ws.send_json_to({"type": "session.join", "session_id": refused["session_id"]})
    assert (await first_error(ws))["code"] == "session_not_found"  # other frames still work
    await ws.disconnect()


# --- fuzzing: any frame at all, never internal_error --------------------------------------------

FIELDS = ["type", "session_id", "message_id", "run_id", "text", "timezone"]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
VALUES = (
    JSON
    | st.sampled_from(["message.send", "session.join", "run.cancel", "", "\x00", "Europe/Paris"])
    | st.uuids().map(str)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
)
SHAPED = st.fixed_dictionaries(  # well-formed but for one or two values: reaches the handlers
    {
        "type": st.sampled_from(["message.send", "session.join", "run.cancel"]),
        "session_id": st.uuids().map(str) | VALUES,
        "message_id": st.uuids().map(str),
        "run_id": st.uuids().map(str) | VALUES,
    },
    optional={"text": VALUES, "timezone": VALUES},
)
FRAMES = st.one_of(
    SHAPED.map(json.dumps),
    st.dictionaries(st.sampled_from(FIELDS), VALUES).map(json.dumps),
    JSON.map(json.dumps),
    st.text(min_size=1, max_size=200),  # (the test client cannot send an empty frame)
    st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 3000).map(lambda depth: '{"type":' * depth + "1" + "}" * depth),
)


@hypothesis_settings(
    max_examples=300,
    derandomize=True,  # the same frames every run
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=FRAMES)
def test_fuzzed_frames_never_get_internal_error(user, entry_agent, caplog, raw):
    caplog.clear()
    answers = async_to_sync(answers_to)(user, raw)
    assert all(a.get("data", {}).get("code") != "internal_error" for a in answers), (raw, answers)
    no_tracebacks(caplog)


async def answers_to(user, raw: str) -> list[dict]:
    """Everything the server sends back within a moment of one frame."""
    ws = await connect(user)
    await ws.send_to(text_data=raw)
    answers = []
    while not await ws.receive_nothing(timeout=0.05):
        answers.append(await ws.receive_json_from())
    await ws.disconnect()
    return answers
