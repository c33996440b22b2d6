"""REST endpoints of routing: what routing remembers of a session, to read and to clear."""

from __future__ import annotations

import uuid

from django.utils.translation import get_language
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chat.selectors import access_session
from config.api_errors import ERRORS
from delegation.routing.memory import memory_clear, memory_shown
from delegation.routing.selectors import memory_of


class MemorySerializer(serializers.Serializer):
    """A session's routing memory, as its owner reads it (in the request's language)."""

    last_intent = serializers.CharField(
        allow_null=True,
        help_text="The last kind of question in words: the expert it went to, by the name "
        "people read in the request's language, else what its mode means.",
    )
    interested_topics = serializers.ListField(child=serializers.CharField())
    visited_docs = serializers.ListField(child=serializers.DictField())
    last_project_focus = serializers.CharField(allow_null=True)


class SessionMemoryView(APIView):
    """What routing remembers of one of the user's sessions."""

    @extend_schema(
        operation_id="sessions_memory_retrieve", responses={200: MemorySerializer, **ERRORS}
    )
    def get(self, request: Request, session_id: uuid.UUID) -> Response:
        """Intents, topics and documents routing remembers (empty when nothing is), in the
        request's language."""
        session = access_session(request.user, session_id)
        memory = memory_of(session=session, user=request.user)
        data = memory.data if memory else {}
        return Response(memory_shown(data=data, language=get_language()))

    @extend_schema(operation_id="sessions_memory_clear", responses={204: None, **ERRORS})
    def delete(self, request: Request, session_id: uuid.UUID) -> Response:
        """Forget it."""
        memory_clear(session=access_session(request.user, session_id), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
