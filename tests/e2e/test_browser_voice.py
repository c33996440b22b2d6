"""Voice in a real browser with a fake microphone: record, the fake speech server's words land in
the composer (not sent), the user sends them; an answer is read aloud; a failed transcription
and a cancelled recording leave the composer as it was."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import CHROMIUM_ARGS, screenshots, shared_chromium, sign_in_as
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

# Chromium answers getUserMedia with a generated tone, without asking.
FAKE_MICROPHONE = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """This module's browser has a fake microphone."""
    with shared_chromium([*CHROMIUM_ARGS, *FAKE_MICROPHONE]) as shared:
        yield shared


@pytest.fixture
def speech_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def voice_site(db, speech_server, start_asgi_server) -> str:
    """alice, an entry agent on the fake model server, and daphne with voice switched on."""
    make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True, provider="openai")
    server = start_asgi_server(
        OPENAI_BASE_URL=speech_server.base_url,
        OPENAI_API_KEY="test-key",
        OPENAI_MAX_RETRIES="0",
        STT_MODEL="fake-whisper",
        TTS_MODEL="fake-tts",
    )
    return server.url


def record(page, seconds: float = 1.2) -> None:
    page.click("#mic")
    page.wait_for_selector("#recording[data-state=recording]")
    page.wait_for_timeout(seconds * 1000)


def test_dictate_then_send_then_hear_the_answer(voice_site, speech_server, browser_page):
    page = browser_page
    speech_server.audio.transcript = "What time is it in Taipei?"
    sign_in_as(page, voice_site)
    page.fill("#text", "Hello,")
    record(page)
    assert page.get_attribute("#mic", "aria-pressed") == "true"
    assert page.get_attribute("#mic", "aria-label") == "Stop recording and transcribe"
    assert page.inner_text("#recording .rec-words") == "Recording…"
    screenshots(page, "voice-recording")

    speech_server.audio.stall_seconds = 1.0  # long enough to see it working
    page.click("#mic")  # stop: the recording goes to the server
    page.wait_for_selector("#recording[data-state=transcribing]")
    assert page.inner_text("#recording .rec-words") == "Transcribing…"
    assert page.is_disabled("#mic")
    page.wait_for_function("() => document.querySelector('#text').value.includes('Taipei')")
    assert page.input_value("#text") == "Hello, What time is it in Taipei?"
    speech_server.audio.stall_seconds = 0
    assert page.is_hidden("#recording")
    assert page.query_selector(".msg.user") is None  # in the composer, not sent
    sent = speech_server.audio_requests[-1]
    assert sent["endpoint"] == "transcriptions" and sent["model"] == "fake-whisper"
    assert sent["content_type"] == "audio/webm" and len(sent["file"]) > 1000
    assert page.evaluate("document.activeElement.id") == "text"

    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.agent[data-status=completed]")
    assert page.inner_text(".msg.user .body") == "Hello, What time is it in Taipei?"
    speak = page.locator(".msg.agent [data-action=speak]")
    assert speak.get_attribute("aria-label") == "Read aloud"
    speak.click()
    page.wait_for_selector(".msg.agent [data-action=speak][data-state=playing]")
    assert speech_server.audio_requests[-1]["input"] == "fallback answer"
    assert speak.get_attribute("aria-label") == "Stop reading aloud"
    screenshots(page, "voice-reading-aloud")
    page.wait_for_selector(".msg.agent [data-action=speak]:not([data-state=playing])")
    assert page.console_errors == []


def test_a_failed_or_cancelled_recording_leaves_the_draft(voice_site, speech_server, browser_page):
    page = browser_page
    sign_in_as(page, voice_site)
    page.fill("#text", "my draft")
    record(page, 0.8)
    page.click("#recording [data-cancel]")
    assert page.is_hidden("#recording")
    assert page.get_attribute("#mic", "aria-pressed") == "false"
    page.wait_for_timeout(300)
    assert speech_server.audio_requests == []  # nothing was sent

    speech_server.audio.status = 500
    record(page, 0.8)
    page.click("#mic")
    page.wait_for_selector("#notice:not([hidden])")
    assert page.inner_text("#notice") == (
        "The speech service could not do this right now. Try again later."
    )
    assert page.input_value("#text") == "my draft"
    screenshots(page, "voice-failed")
