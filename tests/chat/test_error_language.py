"""Error notices in the page's language: REST errors follow the request's language, websocket
`error` frames the socket's page language (its cookie, else Accept-Language); the codes stay
English, and without a language everything stays English."""

from __future__ import annotations

import uuid

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client
from django.utils import translation
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle

from config.asgi import application
from config.errors import ERROR_CODES, NOT_FOUND_MESSAGES, NotFound
from delegation.models import Run, RunStatus
from tests.chat.helpers import send_frame

BUSY = {
    "en": "The agent is still answering your previous message; wait or stop it.",
    "zh-CN": "助理还在回答你的上一条消息，请等待或停止它。",
    "zh-TW": "助理還在回答你的上一則訊息，請等待或停止它。",
}
EMPTY = {"en": "The message is empty.", "zh-hans": "消息是空的。", "zh-hant": "訊息是空的。"}


def _send_twice(client: APIClient) -> dict:
    """A second message while the first one's turn runs: refused with turn_in_progress."""
    sid = uuid.uuid4()
    first = client.post(f"/api/v1/sessions/{sid}/messages/", {"text": "first"}, format="json")
    assert first.status_code == 202
    Run.objects.update(status=RunStatus.RUNNING)
    response = client.post(f"/api/v1/sessions/{sid}/messages/", {"text": "second"}, format="json")
    assert response.status_code == 409
    return response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["en", "zh-CN", "zh-TW"])
def test_a_refused_rest_send_is_explained_in_the_requests_language(user, entry_agent, accept):
    client = APIClient(HTTP_ACCEPT_LANGUAGE=accept)
    client.force_authenticate(user)
    error = _send_twice(client)
    assert error == {"code": "turn_in_progress", "message": BUSY[accept]}


@pytest.mark.django_db
def test_rest_errors_without_a_language_stay_english(user, entry_agent):
    client = APIClient()
    client.force_authenticate(user)
    assert _send_twice(client)["message"] == BUSY["en"]
    missing = client.get(f"/api/v1/sessions/{uuid.uuid4()}/")
    assert missing.json()["error"] == {"code": "session_not_found", "message": "No such session."}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("en", "Request was throttled. Expected available in {wait} seconds."),  # DRF's words
        ("zh-TW", "請求過於頻繁，請在 {wait} 秒後重試。"),
    ],
)
def test_throttling_is_explained_whole_in_the_requests_language(
    user, monkeypatch, accept, expected
):
    rates = {**UserRateThrottle.THROTTLE_RATES, "user": "1/minute"}
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", rates)
    client = APIClient(HTTP_ACCEPT_LANGUAGE=accept)
    client.force_authenticate(user)
    assert client.get("/api/v1/sessions/").status_code == 200
    refused = client.get("/api/v1/sessions/")
    assert refused.status_code == 429
    expected = expected.format(wait=refused["Retry-After"])
    assert refused.json()["error"] == {"code": "throttled", "message": expected}


@pytest.mark.parametrize("what", sorted(NOT_FOUND_MESSAGES))
def test_every_missing_object_is_said_in_chinese(what):
    assert f"{what}_not_found" in ERROR_CODES
    english = NotFound(what).message
    assert english.lower() == f"no such {what.replace('_', ' ')}."  # (MCP: capitals)
    for language in ("zh-hans", "zh-hant"):
        with translation.override(language):
            said = NotFound(what).message
        assert said.startswith("找不到") and said != english


def test_every_not_found_code_has_a_sentence():
    codes = {code.removesuffix("_not_found") for code in ERROR_CODES if code != "not_found"}
    assert {c for c in codes if f"{c}_not_found" in ERROR_CODES} == set(NOT_FOUND_MESSAGES)


async def _socket(user, cookies: dict[str, str]) -> WebsocketCommunicator:
    """A socket through the real ASGI stack, signed in by a session cookie, with `cookies`."""
    client = Client()
    await database_sync_to_async(client.force_login)(user)
    jar = {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}
    cookie = "; ".join(f"{k}={v}" for k, v in {**jar, **cookies}.items())
    headers = [(b"origin", b"http://localhost"), (b"cookie", cookie.encode())]
    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hans", "zh-hant"])
async def test_a_refused_socket_send_is_explained_in_the_pages_language(
    user, entry_agent, language
):
    cookies = {} if language == "en" else {settings.LANGUAGE_COOKIE_NAME: language}
    ws = await _socket(user, cookies)
    # The empty text is refused by turn_start, in database_sync_to_async's thread: the
    # language the consumer activated reaches it.
    await ws.send_json_to(send_frame(""))
    event = await ws.receive_json_from(timeout=5)
    assert event["type"] == "error"
    assert event["data"]["code"] == "empty_message"
    assert event["data"]["message"] == EMPTY[language]
    await ws.send_to(text_data="{not json")  # refused by the consumer itself, before any thread
    event = await ws.receive_json_from(timeout=5)
    assert event["data"]["code"] == "bad_json"
    assert event["data"]["message"].startswith(
        {"en": "The frame is not valid JSON", "zh-hans": "这一帧", "zh-hant": "這個訊框"}[language]
    )
    await ws.disconnect()
