"""Speech to text and text to speech through the OpenAI-compatible audio API (docs/voice.md)."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.utils import translation
from django.utils.translation import gettext as _

from chat.models import ChatMessage
from chat.voice.selectors import voice_features
from config.errors import AppError
from config.text import in_script, reply_language

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The recordings browsers make (MediaRecorder) and the other formats the audio API reads, with
# the file name extension the server tells formats apart by.
AUDIO_TYPES: dict[str, str] = {
    "audio/webm": "webm",
    "video/webm": "webm",  # some browsers label an audio-only WebM recording so
    "audio/ogg": "ogg",
    "audio/mp4": "mp4",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/aac": "m4a",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/wave": "wav",
    "audio/x-wav": "wav",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
}
# Room for the multipart envelope around the file when the request's length is checked.
ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Speech:
    """An answer read aloud: the audio and its media type."""

    content: bytes
    content_type: str = "audio/mpeg"


def _not_configured(what: str) -> AppError:
    return AppError("voice_not_configured", what, status=404)


def transcription_check(*, declared_bytes: int) -> None:
    """Refuse a recording before it is read: speech to text is off, or the request is larger
    than VOICE_MAX_UPLOAD_BYTES allows."""
    if not voice_features().transcribe:
        raise _not_configured(_("Speech to text is not set up on this server."))
    if declared_bytes > settings.VOICE_MAX_UPLOAD_BYTES + ENVELOPE_BYTES:
        raise _too_large(declared_bytes)


def speech_check() -> None:
    """Refuse reading aloud when text to speech is off."""
    if not voice_features().speak:
        raise _not_configured(_("Reading aloud is not set up on this server."))


def audio_transcribe(*, upload: UploadedFile | None, language: str, page_language: str) -> str:
    """The words of a recording, in the page's script for Chinese (a 繁體 page gets 繁體).
    `language` (optional, a page language code) tells the server what is spoken."""
    if upload is None:
        raise AppError(
            "invalid",
            _("No recording was sent."),
            details={"audio": [_("This field is required.")]},
        )
    extension = AUDIO_TYPES.get((upload.content_type or "").split(";")[0].strip().lower())
    if extension is None:
        raise AppError(
            "unsupported_file",
            _("The recording is not audio the speech server can read (%(type)s).")
            % {"type": upload.content_type or "?"},
            status=415,
        )
    if not upload.size:
        raise AppError("empty_file", _("The recording is empty."))
    if upload.size > settings.VOICE_MAX_UPLOAD_BYTES:
        raise _too_large(upload.size)
    arguments: dict[str, Any] = {
        "model": settings.STT_MODEL,
        "file": (f"recording.{extension}", upload.read(), upload.content_type),
    }
    spoken = _spoken_language(language)
    if spoken:
        arguments["language"] = spoken
    answer = _calling(lambda client: client.audio.transcriptions.create(**arguments))
    text = " ".join((answer.text or "").split())
    return in_script(text, page_language) if page_language.lower().startswith("zh") else text


def message_speak(*, message: ChatMessage, page_language: str) -> Speech:
    """The answer read aloud, in the voice TTS_VOICES gives its language."""
    text = speakable(message.content)
    if not text:
        raise AppError("invalid", _("This message has no text to read aloud."))
    if len(text) > settings.TTS_MAX_CHARS:
        raise AppError(
            "speech_too_long",
            _(
                "This answer is too long to read aloud (%(count)s characters; the limit is "
                "%(limit)s)."
            )
            % {"count": len(text), "limit": settings.TTS_MAX_CHARS},
            details={"chars": len(text), "limit": settings.TTS_MAX_CHARS},
        )
    voice = voice_for(reply_language(text, page_language))
    answer = _calling(
        lambda client: client.audio.speech.create(
            model=settings.TTS_MODEL, voice=voice, input=text, response_format="mp3"
        )
    )
    return Speech(content=answer.content)


def voice_for(language: str) -> str:
    """The TTS voice of a language: its own in TTS_VOICES, else its base language's (zh for
    zh-hant), else the first one listed, else alloy."""
    voices = {str(key).lower(): str(value) for key, value in settings.TTS_VOICES.items()}
    language = language.lower()
    return (
        voices.get(language)
        or voices.get(language.split("-")[0])
        or next(iter(voices.values()), "alloy")
    )


# Markdown marks a listener should not hear: images and links keep their words, code fences,
# emphasis, headings, quotes, list bullets, table rules and citation markers ([1]) go.
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_CITATION = re.compile(r"\s*\[\d{1,3}\]")
_FENCE = re.compile(r"^\s*(```|~~~).*$", re.MULTILINE)
_LINE_MARK = re.compile(r"^\s*(#{1,6}\s+|>\s?|[-*+]\s+(\[[ xX]\]\s+)?|\|?[-:| ]{3,}\|?\s*$)", re.M)
_INLINE_MARK = re.compile(r"(\*\*|__|~~|`|\*(?=\S)|(?<=\S)\*)")


def speakable(text: str) -> str:
    """An answer's Markdown as plain words to read aloud."""
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _URL.sub("", text)
    text = _CITATION.sub("", text)
    text = _FENCE.sub("", text)
    text = _LINE_MARK.sub("", text)
    text = _INLINE_MARK.sub("", text).replace("|", " ")
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _spoken_language(language: str) -> str:
    """The ISO 639-1 code the audio API takes for a page language ("zh-hant" → "zh"); "" for
    none; `invalid` for a language the page does not offer."""
    if not language:
        return ""
    try:
        supported = translation.get_supported_language_variant(language.lower())
    except LookupError:
        raise AppError(
            "invalid",
            _("The language is not one this page offers."),
            details={"language": [language]},
        ) from None
    return supported.split("-")[0]


def _too_large(size: int) -> AppError:
    limit = settings.VOICE_MAX_UPLOAD_BYTES
    return AppError(
        "file_too_large",
        _(
            "The recording is too long (%(size)s MB; the limit is %(limit)s MB). Record a shorter "
            "message."
        )
        % {"size": f"{size / 1_000_000:.1f}", "limit": f"{limit / 1_000_000:.1f}"},
        details={"bytes": size, "limit": limit},
        status=413,
    )


def _calling(call: Callable[[openai.OpenAI], T]) -> T:
    """The audio API's answer, or an AppError a person can read for its failures."""
    import openai

    try:
        return call(_client())
    except openai.APITimeoutError:
        logger.warning("speech server timed out after %ss", settings.VOICE_TIMEOUT)
        raise AppError(
            "voice_timeout",
            _("The speech service did not answer in time. Try again."),
            status=504,
        ) from None
    except openai.APIStatusError as exc:
        logger.warning("speech server answered %s: %s", exc.status_code, exc.message)
        raise AppError(
            "voice_unavailable",
            _("The speech service could not do this right now. Try again later."),
            details={"status": exc.status_code},
            status=502,
        ) from None
    except openai.APIError as exc:  # unreachable, or an answer that is not what it should be
        logger.warning("speech server failed: %s", exc)
        raise AppError(
            "voice_unavailable",
            _("The speech service cannot be reached right now. Try again later."),
            status=502,
        ) from None


def _client() -> openai.OpenAI:
    """The voice server's own address and key when VOICE_BASE_URL is set (the models' key is
    never sent to another server), else the models' server."""
    if settings.VOICE_BASE_URL:
        base_url, key = settings.VOICE_BASE_URL, settings.VOICE_API_KEY
    else:
        base_url, key = settings.OPENAI_BASE_URL, settings.VOICE_API_KEY or settings.OPENAI_API_KEY
    return _client_for(
        base_url or None, key or "not-needed", settings.VOICE_TIMEOUT, settings.OPENAI_MAX_RETRIES
    )


@functools.lru_cache(maxsize=4)
def _client_for(
    base_url: str | None, api_key: str, timeout: float, max_retries: int
) -> openai.OpenAI:
    # Imported where used: the SDK takes about 0.9 s to import (agents/providers/).
    import openai

    return openai.OpenAI(
        base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
    )
