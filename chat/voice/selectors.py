"""Reads for voice: which halves are switched on, and the answers a user may hear read aloud."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from chat.models import ChatMessage, MessageRole
from config.errors import NotFound


@dataclass(frozen=True)
class VoiceFeatures:
    """What the page offers: the microphone, "Read aloud", and the recording's limits."""

    transcribe: bool
    speak: bool
    max_seconds: int
    max_bytes: int


def _speech_server_set() -> bool:
    """A server to send audio to: its own, or the models' (a key alone means OpenAI's)."""
    return bool(
        settings.VOICE_BASE_URL
        or settings.VOICE_API_KEY
        or settings.OPENAI_BASE_URL
        or settings.OPENAI_API_KEY
    )


def voice_features() -> VoiceFeatures:
    """The voice features this server has: each needs its model and a speech server."""
    server = _speech_server_set()
    return VoiceFeatures(
        transcribe=bool(settings.STT_MODEL) and server,
        speak=bool(settings.TTS_MODEL) and server,
        max_seconds=settings.STT_MAX_SECONDS,
        max_bytes=settings.VOICE_MAX_UPLOAD_BYTES,
    )


def access_spoken_message(user: Any, message_id: uuid.UUID | str) -> ChatMessage:
    """An agent message of one of the user's own sessions; another user's message, a user or
    tool message, or no message at all is answered alike (NotFound)."""
    message = ChatMessage.objects.filter(
        pk=message_id, session__user=user, role=MessageRole.AGENT
    ).first()
    if message is None:
        raise NotFound("message")
    return message
