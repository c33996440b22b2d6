"""Voice through the real views and the real `openai` client against the local fake audio API:
a recording becomes words for the composer (never a sent message), an answer of the user's own
chats is read aloud, and every bad input, limit and failure of the speech server is a plain
error in the API's one shape, in the page's language."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.throttling import ScopedRateThrottle

from chat.models import ChatMessage, ChatSession, MessageRole
from chat.voice.services import speakable, voice_for
from tests.fake_openai import SILENT_MP3, FakeOpenAI

pytestmark = pytest.mark.django_db

TRANSCRIPTIONS = "/voice/transcriptions/"
SPEECH = "/voice/speech/"
RECORDING = b"\x1aE\xdf\xa3" + b"webm opus frames " * 64  # what the fake server receives


@pytest.fixture
def voice(fake_openai: FakeOpenAI, settings) -> FakeOpenAI:
    """Speech to text and text to speech on, through the fake server."""
    settings.STT_MODEL = "fake-whisper"
    settings.TTS_MODEL = "fake-tts"
    settings.VOICE_TIMEOUT = 1.0
    return fake_openai


def signed_in(user: Any, language: str = "en") -> Client:
    """A browser of `user` with CSRF checks on, as the page sends them."""
    client = Client(enforce_csrf_checks=True, HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    client.get("/")  # the page sets the csrftoken cookie
    return client


def csrf(client: Client) -> dict[str, str]:
    return {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}


def upload(client: Client, data: bytes = RECORDING, kind: str = "audio/webm", **fields: Any):
    audio = SimpleUploadedFile("recording.webm", data, content_type=kind)
    return client.post(TRANSCRIPTIONS, {"audio": audio, **fields}, **csrf(client))


def speak(client: Client, message_id: Any):
    body = {"message_id": str(message_id)}
    return client.post(SPEECH, body, content_type="application/json", **csrf(client))


def answer(user: Any, text: str, role: str = MessageRole.AGENT) -> ChatMessage:
    """A message in a new chat of `user`."""
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user)
    agent = {"kind": "entry", "name": "assistant", "display_name": "Assistant", "depth": 0}
    return ChatMessage.objects.create(
        id=uuid.uuid4(), session=session, role=role, content=text, agent=agent
    )


def error_of(response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]


# ---- speech to text ---------------------------------------------------------------------------


def test_a_recording_becomes_words_and_nothing_is_sent(voice, user):
    voice.audio.transcript = "Remind me to call   Mum at six"
    client = signed_in(user)
    response = upload(client)
    assert response.status_code == 200
    assert response.json() == {"text": "Remind me to call Mum at six"}
    sent = voice.audio_requests[-1]
    assert sent["endpoint"] == "transcriptions"
    assert sent["model"] == "fake-whisper"
    assert sent["file"] == RECORDING
    assert sent["filename"] == "recording.webm"
    assert sent["content_type"] == "audio/webm"
    assert "language" not in sent  # the server tells the language by itself
    assert voice.authorizations[-1] == "Bearer test-key"
    assert not ChatMessage.objects.exists()  # words for the composer, not a message


@pytest.mark.parametrize(
    ("page", "heard", "expected"),
    [
        ("zh-TW", "提醒我明天开会", "提醒我明天開會"),  # a 繁體 page gets 繁體
        ("zh-CN", "提醒我明天開會", "提醒我明天开会"),
        ("en", "提醒我明天開會", "提醒我明天開會"),  # as heard
    ],
)
def test_chinese_is_written_in_the_pages_script(voice, user, page, heard, expected):
    voice.audio.transcript = heard
    response = upload(signed_in(user, page))
    assert response.status_code == 200
    assert response.json()["text"] == expected


def test_a_language_given_reaches_the_speech_server_as_its_iso_code(voice, user):
    client = signed_in(user)
    assert upload(client, language="zh-hant").status_code == 200
    assert voice.audio_requests[-1]["language"] == "zh"
    response = upload(client, language="klingon")
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid"
    assert len(voice.audio_requests) == 1


def test_safari_and_firefox_recordings_are_accepted(voice, user):
    client = signed_in(user)
    assert upload(client, kind="audio/mp4").status_code == 200
    assert voice.audio_requests[-1]["filename"] == "recording.mp4"
    assert upload(client, kind="audio/ogg").status_code == 200
    assert voice.audio_requests[-1]["filename"] == "recording.ogg"


def test_no_file_is_refused(voice, user):
    client = signed_in(user)
    response = client.post(TRANSCRIPTIONS, {"language": "en"}, **csrf(client))
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid"
    assert error["message"] == "No recording was sent."
    assert "audio" in error["details"]
    assert voice.audio_requests == []


def test_an_empty_file_is_refused(voice, user):
    response = upload(signed_in(user), data=b"")
    assert response.status_code == 400
    assert error_of(response)["code"] == "empty_file"
    assert voice.audio_requests == []


def test_a_file_over_the_limit_is_refused_with_413(voice, user, settings):
    settings.VOICE_MAX_UPLOAD_BYTES = 1000
    client = signed_in(user)
    assert upload(client, data=b"x" * 1000).status_code == 200  # at the limit
    response = upload(client, data=b"x" * 1001)
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "file_too_large"
    assert error["details"] == {"bytes": 1001, "limit": 1000}
    assert len(voice.audio_requests) == 1


def test_a_request_far_over_the_limit_is_refused_before_it_is_read(voice, user, settings):
    settings.VOICE_MAX_UPLOAD_BYTES = 1000
    response = upload(signed_in(user), data=b"x" * 200_000)
    assert response.status_code == 413
    assert error_of(response)["code"] == "file_too_large"
    assert voice.audio_requests == []


def test_a_file_that_is_not_audio_is_refused_with_415(voice, user):
    response = upload(signed_in(user), data=b"%PDF-1.7", kind="application/pdf")
    assert response.status_code == 415
    error = error_of(response)
    assert error["code"] == "unsupported_file"
    assert "application/pdf" in error["message"]
    assert voice.audio_requests == []


def test_a_body_that_is_not_a_form_is_refused_with_415(voice, user):
    client = signed_in(user)
    response = client.post(
        TRANSCRIPTIONS, {"audio": "hello"}, content_type="application/json", **csrf(client)
    )
    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


def test_the_speech_servers_error_is_a_plain_502(voice, user):
    voice.audio.status = 500
    response = upload(signed_in(user))
    assert response.status_code == 502
    error = error_of(response)
    assert error["code"] == "voice_unavailable"
    assert error["message"] == "The speech service could not do this right now. Try again later."
    assert "scripted" not in error["message"]  # the server's own words stay in the log
    assert error["details"] == {"status": 500}


def test_a_speech_server_that_does_not_answer_in_time_is_a_504(voice, user, settings):
    settings.VOICE_TIMEOUT = 0.3
    voice.audio.stall_seconds = 1.0
    response = upload(signed_in(user))
    assert response.status_code == 504
    assert error_of(response)["code"] == "voice_timeout"


def test_an_unreachable_speech_server_is_a_502(voice, user, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    response = upload(signed_in(user))
    assert response.status_code == 502
    error = error_of(response)
    assert error["code"] == "voice_unavailable"
    assert "cannot be reached" in error["message"]


def test_errors_are_in_the_pages_language(voice, user):
    voice.audio.status = 503
    response = upload(signed_in(user, "zh-TW"))
    assert response.status_code == 502
    assert error_of(response)["message"] == "語音服務現在無法處理這個要求，請稍後再試。"
    response = upload(signed_in(user, "zh-CN"), data=b"")
    assert error_of(response)["message"] == "录音是空的。"


def test_without_stt_model_the_endpoint_refuses(voice, user, settings):
    settings.STT_MODEL = ""
    response = upload(signed_in(user))
    assert response.status_code == 404
    assert error_of(response)["code"] == "voice_not_configured"
    assert voice.audio_requests == []


def test_strangers_and_forged_requests_are_refused(voice, user):
    anonymous = Client(enforce_csrf_checks=True)
    audio = SimpleUploadedFile("r.webm", RECORDING, content_type="audio/webm")
    response = anonymous.post(TRANSCRIPTIONS, {"audio": audio})
    assert response.status_code == 403
    assert error_of(response)["code"] == "not_authenticated"
    client = signed_in(user)
    audio = SimpleUploadedFile("r.webm", RECORDING, content_type="audio/webm")
    response = client.post(TRANSCRIPTIONS, {"audio": audio})  # no X-CSRFToken
    assert response.status_code == 403
    assert error_of(response)["code"] == "permission_denied"
    assert voice.audio_requests == []


def test_voice_is_rate_limited_with_the_error_shape(voice, user, monkeypatch):
    rates = {**ScopedRateThrottle.THROTTLE_RATES, "voice": "2/minute"}
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", rates)
    client = signed_in(user)
    assert [upload(client).status_code for _ in range(2)] == [200, 200]
    response = speak(client, answer(user, "Hello.").id)  # one rate for both
    assert response.status_code == 429
    assert error_of(response)["code"] == "throttled" and "Retry-After" in response
    assert len(voice.audio_requests) == 2


# ---- text to speech ---------------------------------------------------------------------------


def test_an_answer_is_read_aloud_in_the_voice_of_its_language(voice, user, settings):
    settings.TTS_VOICES = {"en": "alloy", "zh-hant": "shimmer", "zh-hans": "nova"}
    client = signed_in(user)
    english = answer(user, "**Sunny** tomorrow in [Taipei](https://example.com/taipei) [1].")
    response = speak(client, english.id)
    assert response.status_code == 200
    assert response["Content-Type"] == "audio/mpeg"
    assert response.content == SILENT_MP3
    sent = voice.audio_requests[-1]
    assert sent == {
        "endpoint": "speech",
        "model": "fake-tts",
        "voice": "alloy",
        "input": "Sunny tomorrow in Taipei.",
        "response_format": "mp3",
    }
    assert speak(client, answer(user, "明天臺北會下雨。").id).status_code == 200
    assert voice.audio_requests[-1]["voice"] == "shimmer"
    assert speak(client, answer(user, "明天台北会下雨。").id).status_code == 200
    assert voice.audio_requests[-1]["voice"] == "nova"


def test_another_users_answer_is_not_found_and_nothing_is_spoken(voice, user, other_user):
    theirs = answer(other_user, "Mallory's salary is 100.")
    response = speak(signed_in(user), theirs.id)
    assert response.status_code == 404
    assert error_of(response)["code"] == "message_not_found"
    assert voice.audio_requests == []


@pytest.mark.parametrize("role", [MessageRole.USER, MessageRole.TOOL])
def test_only_answers_are_read_aloud(voice, user, role):
    response = speak(signed_in(user), answer(user, "my own words", role=role).id)
    assert response.status_code == 404
    assert voice.audio_requests == []


def test_an_unknown_or_malformed_message_id_is_refused(voice, user):
    client = signed_in(user)
    assert error_of(speak(client, uuid.uuid4()))["code"] == "message_not_found"
    response = speak(client, "not-a-uuid")
    assert response.status_code == 400
    assert "message_id" in error_of(response)["details"]
    assert voice.audio_requests == []


def test_an_answer_over_the_limit_is_not_read(voice, user, settings):
    settings.TTS_MAX_CHARS = 20
    client = signed_in(user)
    assert speak(client, answer(user, "a" * 20).id).status_code == 200  # at the limit
    response = speak(client, answer(user, "a" * 21).id)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "speech_too_long"
    assert error["details"] == {"chars": 21, "limit": 20}
    assert len(voice.audio_requests) == 1


def test_an_answer_with_nothing_to_say_is_refused(voice, user):
    response = speak(signed_in(user), answer(user, "[1] https://example.com").id)
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid"
    assert voice.audio_requests == []


def test_speech_failures_are_502_and_504(voice, user, settings):
    client = signed_in(user, "zh-CN")
    message = answer(user, "Hello there.")
    voice.audio.status = 429
    response = speak(client, message.id)
    assert response.status_code == 502
    assert error_of(response)["message"] == "语音服务现在无法处理这个请求，请稍后再试。"
    voice.audio.status = 200
    voice.audio.stall_seconds = 1.0
    settings.VOICE_TIMEOUT = 0.3
    assert error_of(speak(client, message.id))["code"] == "voice_timeout"


def test_without_tts_model_nothing_is_read(voice, user, settings):
    settings.TTS_MODEL = ""
    response = speak(signed_in(user), answer(user, "Hello.").id)
    assert response.status_code == 404
    assert error_of(response)["code"] == "voice_not_configured"
    assert voice.audio_requests == []


# ---- the page ---------------------------------------------------------------------------------


def test_the_page_offers_what_the_server_has(voice, user, settings):
    page = signed_in(user).get("/").content.decode()
    assert 'id="mic"' in page
    assert 'data-transcribe-url="/voice/transcriptions/"' in page
    assert 'data-speech-url="/voice/speech/"' in page
    settings.STT_MODEL = ""
    page = signed_in(user).get("/").content.decode()
    assert 'id="mic"' not in page and "data-transcribe-url" not in page
    assert 'data-speech-url="/voice/speech/"' in page
    settings.TTS_MODEL = ""
    page = signed_in(user).get("/").content.decode()
    assert "data-speech-url" not in page


def test_without_a_speech_server_nothing_is_offered(user, settings):
    settings.STT_MODEL, settings.TTS_MODEL = "whisper-1", "tts-1"
    settings.OPENAI_API_KEY = settings.OPENAI_BASE_URL = ""
    settings.VOICE_API_KEY = settings.VOICE_BASE_URL = ""
    page = signed_in(user).get("/").content.decode()
    assert 'id="mic"' not in page and "data-speech-url" not in page


# ---- the words read aloud ---------------------------------------------------------------------


def test_markdown_is_read_as_words():
    text = "# Plan\n\n- **Buy** milk [1]\n- see ![map](x.png) at https://x.y/z\n\n```\ncode\n```"
    assert speakable(text) == "Plan\nBuy milk\nsee map at\ncode"
    assert speakable("| a | b |\n|---|---|\n| 1 | 2 |") == "a b\n1 2"
    assert speakable("2 * 3 = 6") == "2 * 3 = 6"


def test_a_language_without_its_own_voice_gets_its_base_or_the_first(settings):
    settings.TTS_VOICES = {"zh": "nova", "en": "alloy"}
    assert voice_for("zh-hant") == "nova"
    assert voice_for("fr") == "nova"
    settings.TTS_VOICES = {}
    assert voice_for("en") == "alloy"
