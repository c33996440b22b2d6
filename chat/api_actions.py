"""REST endpoints of the chat page's message actions: try an answer again, edit and resend a
message (the replaced turn stays as an older branch), rate answers, and search chats by content.
Every object is looked up within the requesting user's own sessions."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from chat.feedback import (
    NOTE_MAX_CHARS,
    access_answer,
    feedback_clear,
    feedback_of_session,
    feedback_set,
)
from chat.selectors import access_session, search_snippet, sessions_search
from chat.serializers import TIMEZONES, MessageSerializer, TimezoneField
from chat.services import preference_set_timezone
from config.api_errors import ERRORS, ErrorSerializer
from config.api_fields import StrictBooleanField, StrictCharField, StrictUUIDField
from delegation.turns import SentMessage, turn_edit, turn_regenerate

SEARCH_LIMIT = 50
RATINGS = {"up": 1, "down": -1}


class BranchMessageSerializer(MessageSerializer):
    """A message with where it came from: `origin` ("scheduled" or ""), `edited_from` (the
    message an edit replaced) and `superseded_by` (the turn that replaced it, if any)."""

    edited_from = serializers.UUIDField(source="edited_from_id", allow_null=True, read_only=True)
    superseded_by = serializers.UUIDField(allow_null=True, read_only=True)

    class Meta(MessageSerializer.Meta):
        fields = [*MessageSerializer.Meta.fields, "origin", "edited_from", "superseded_by"]
        read_only_fields = fields


class TurnAcceptedSerializer(serializers.Serializer):
    """The user message being answered and the new turn's root run."""

    message = BranchMessageSerializer()
    run_id = serializers.UUIDField(allow_null=True)
    duplicate = serializers.BooleanField()


class RegenerateSerializer(serializers.Serializer):
    """Optional routing overrides for the new turn."""

    force_strict = StrictBooleanField(required=False, default=False)
    force_guide = StrictBooleanField(required=False, default=False)


class EditSerializer(RegenerateSerializer):
    """The edited text; `id` (the new message's id) makes retries idempotent."""

    id = StrictUUIDField(required=False, help_text="Client-chosen id of the edited message.")
    text = StrictCharField(max_length=settings.CHAT_MAX_MESSAGE_CHARS, trim_whitespace=True)
    timezone = TimezoneField(choices=TIMEZONES, required=False)


class FeedbackInSerializer(serializers.Serializer):
    """A rating of an answer and an optional note."""

    rating = serializers.ChoiceField(choices=list(RATINGS))
    note = StrictCharField(
        max_length=NOTE_MAX_CHARS, required=False, allow_blank=True, trim_whitespace=True
    )


class FeedbackSerializer(serializers.Serializer):
    """The user's rating of one answer."""

    message_id = serializers.UUIDField()
    rating = serializers.ChoiceField(choices=list(RATINGS))
    note = serializers.CharField(allow_blank=True)


class SearchQuerySerializer(serializers.Serializer):
    """Words to find in titles and messages."""

    q = StrictCharField(max_length=200, allow_blank=True, trim_whitespace=True)


class SearchHitSerializer(serializers.Serializer):
    """A chat that matches, with an excerpt of the matching message ("" if only the title)."""

    id = serializers.UUIDField()
    title = serializers.CharField(allow_blank=True)
    updated_at = serializers.DateTimeField()
    snippet = serializers.CharField(allow_blank=True)


class SearchResultsSerializer(serializers.Serializer):
    """The matching chats, most recently active first (at most 50)."""

    results = SearchHitSerializer(many=True)


def _accepted(sent: SentMessage) -> Response:
    body = {
        "message": BranchMessageSerializer(sent.message).data,
        "run_id": sent.run.id if sent.run else None,
        "duplicate": not sent.created,
    }
    return Response(body, status=status.HTTP_202_ACCEPTED)


def _rating_word(value: int) -> str:
    return "up" if value > 0 else "down"


class SendRateMixin:
    """Starting a turn shares the tighter "send" rate of POST /messages/."""

    throttle_scope = "send"

    def get_throttles(self) -> list[Any]:
        """The default throttles plus the send scope."""
        return [*super().get_throttles(), ScopedRateThrottle()]  # type: ignore[misc]


class RegenerateView(SendRateMixin, APIView):
    """Answer a user message again."""

    @extend_schema(
        operation_id="messages_regenerate",
        request=RegenerateSerializer,
        responses={202: TurnAcceptedSerializer, 409: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request, session_id: uuid.UUID, message_id: uuid.UUID) -> Response:
        """Start a new turn for this user message (try again, also after a stop or an error);
        the answers after it stay in the history as an older branch (`superseded_by`)."""
        serializer = RegenerateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        sent = turn_regenerate(
            user=request.user,
            session_id=session_id,
            message_id=message_id,
            flags=serializer.validated_data,
            language=request.LANGUAGE_CODE,
        )
        return _accepted(sent)


class EditView(SendRateMixin, APIView):
    """Edit a user message and send it again."""

    @extend_schema(
        operation_id="messages_edit",
        request=EditSerializer,
        responses={202: TurnAcceptedSerializer, 409: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request, session_id: uuid.UUID, message_id: uuid.UUID) -> Response:
        """Store the edited text as a new message (`edited_from` this one) and answer it; this
        message and everything after it stay in the history as an older branch."""
        serializer = EditSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data.get("timezone"):
            preference_set_timezone(user=request.user, timezone_name=data["timezone"])
        flags = {k: data[k] for k in ("force_strict", "force_guide")}
        sent = turn_edit(
            user=request.user,
            session_id=session_id,
            message_id=message_id,
            new_message_id=data.get("id") or uuid.uuid4(),
            text=data["text"],
            flags=flags,
            language=request.LANGUAGE_CODE,
        )
        return _accepted(sent)


class FeedbackView(APIView):
    """The user's thumbs up or down on one answer."""

    @extend_schema(
        operation_id="messages_feedback_set",
        request=FeedbackInSerializer,
        responses={200: FeedbackSerializer, **ERRORS},
    )
    def put(self, request: Request, session_id: uuid.UUID, message_id: uuid.UUID) -> Response:
        """Rate the answer (`up` or `down`, with an optional note); rating again replaces it."""
        message = access_answer(request.user, session_id, message_id)
        serializer = FeedbackInSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        feedback = feedback_set(
            user=request.user,
            message=message,
            rating=RATINGS[data["rating"]],
            note=data.get("note", ""),
        )
        body = {
            "message_id": message.id,
            "rating": _rating_word(feedback.rating),
            "note": feedback.note,
        }
        return Response(FeedbackSerializer(body).data)

    @extend_schema(operation_id="messages_feedback_clear", responses={204: None, **ERRORS})
    def delete(self, request: Request, session_id: uuid.UUID, message_id: uuid.UUID) -> Response:
        """Take the rating back."""
        feedback_clear(
            user=request.user, message=access_answer(request.user, session_id, message_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionFeedbackView(APIView):
    """The user's ratings in one session."""

    @extend_schema(
        operation_id="sessions_feedback_list",
        responses={200: FeedbackSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request, session_id: uuid.UUID) -> Response:
        """Every answer of the session the user rated."""
        session = access_session(request.user, session_id)
        rows = [
            {"message_id": mid, "rating": _rating_word(f["rating"]), "note": f["note"]}
            for mid, f in feedback_of_session(user=request.user, session=session).items()
        ]
        return Response(FeedbackSerializer(rows, many=True).data)


class SessionSearchView(APIView):
    """Search the user's chats by what was said in them."""

    @extend_schema(
        operation_id="sessions_search",
        parameters=[
            OpenApiParameter(
                "q",
                {"type": "string", "maxLength": 200},
                required=True,
                description="Words to find (blank: no results).",
            )
        ],
        responses={200: SearchResultsSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Chats whose title or messages contain `q` (any case, any script), newest first, with
        an excerpt of the latest matching message."""
        query = SearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        words = query.validated_data["q"]  # DRF refuses NUL characters (400)
        if not words:
            return Response({"results": []})
        sessions = list(sessions_search(user=request.user, query=words)[:SEARCH_LIMIT])
        hits = [
            {
                "id": s.id,
                "title": s.title,
                "updated_at": s.updated_at,
                "snippet": search_snippet(session=s, query=words),
            }
            for s in sessions
        ]
        return Response(SearchResultsSerializer({"results": hits}).data)
