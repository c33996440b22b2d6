"""The chat page's voice endpoints: a recording in, its words out; an answer in, its speech out."""

from __future__ import annotations

from django.http import HttpResponse
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle, UserRateThrottle
from rest_framework.views import APIView

from chat.voice.selectors import access_spoken_message
from chat.voice.services import audio_transcribe, message_speak, speech_check, transcription_check


class VoiceView(APIView):
    """The page's own endpoints: its signed-in user (session and CSRF token), the `voice` rate
    (API_THROTTLE_VOICE), errors in the API's one shape; not part of the public API's schema."""

    authentication_classes = [SessionAuthentication]
    throttle_classes = [UserRateThrottle, ScopedRateThrottle]
    throttle_scope = "voice"
    schema = None


class TranscriptionView(VoiceView):
    """`POST` a recording (multipart field `audio`, optional `language`): `{"text"}`."""

    parser_classes = [MultiPartParser]

    def post(self, request: Request) -> Response:
        """The recording's words, for the user to edit or send (nothing is sent here)."""
        transcription_check(declared_bytes=int(request.META.get("CONTENT_LENGTH") or 0))
        text = audio_transcribe(
            upload=request.FILES.get("audio"),
            language=str(request.data.get("language") or ""),
            page_language=request.LANGUAGE_CODE,
        )
        return Response({"text": text})


class SpeechRequestSerializer(serializers.Serializer):
    """`{"message_id"}`: an answer in one of the user's chats."""

    message_id = serializers.UUIDField()


class SpeechView(VoiceView):
    """`POST {"message_id"}`: the answer read aloud, as audio/mpeg."""

    parser_classes = [JSONParser]

    def post(self, request: Request) -> HttpResponse:
        """The user's own answer read aloud; any other id is answered as missing."""
        speech_check()
        serializer = SpeechRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        message = access_spoken_message(request.user, serializer.validated_data["message_id"])
        speech = message_speak(message=message, page_language=request.LANGUAGE_CODE)
        response = HttpResponse(speech.content, content_type=speech.content_type)
        response["Cache-Control"] = "private, no-store"
        return response
