"""REST endpoints of chat: sessions, messages (send and list), API tokens."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions as drf_exceptions
from rest_framework import status
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from chat.models import ApiToken
from chat.selectors import access_session, session_messages, sessions_of, sessions_titled
from chat.serializers import (
    MessageAcceptedSerializer,
    MessagePageSerializer,
    MessageSendSerializer,
    MessageSerializer,
    SessionPageSerializer,
    SessionRenameSerializer,
    SessionSearchSerializer,
    SessionSerializer,
    TokenCreatedSerializer,
    TokenCreateSerializer,
    TokenSerializer,
)
from chat.services import preference_set_timezone, session_create, session_rename
from chat.tokens import token_create, token_revoke
from config.api_errors import ERRORS, ErrorSerializer
from config.errors import NotFound
from delegation.turns import session_delete, turn_start


class TimestampCursor(CursorPagination):
    """Cursor pages keyed by a timestamp: a forged cursor whose position is no timestamp is an
    invalid cursor (404, as DRF answers other bad cursors), not a database error."""

    # DRF's sentence, in our catalogues too (DRF's zh_Hant catalogue lacks it).
    invalid_cursor_message = gettext_lazy("Invalid cursor")  # type: ignore[assignment]

    def decode_cursor(self, request: Request) -> Cursor | None:
        """The cursor, with its position checked to be a timestamp."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            try:
                valid = "\x00" not in cursor.position and parse_datetime(cursor.position)
            except ValueError:  # well formed but impossible, e.g. month 13
                valid = False
            if not valid:
                raise drf_exceptions.NotFound(self.invalid_cursor_message)
        return cursor


class NewestFirst(TimestampCursor):
    """Cursor pages, most recently active first."""

    page_size = settings.API_PAGE_SIZE
    ordering = ("-updated_at", "-id")


class InOrder(TimestampCursor):
    """Cursor pages in the order messages were shown."""

    page_size = settings.API_PAGE_SIZE
    ordering = ("created_at", "id")


class SessionListView(APIView):
    """The user's sessions: list (search by title) and create."""

    @extend_schema(
        operation_id="sessions_list",
        parameters=[
            OpenApiParameter(
                "search", str, description="Part of the title (繁/简 and case folded)."
            ),
            OpenApiParameter("cursor", str, description="From a page's next/previous link."),
        ],
        responses={200: SessionPageSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Own sessions, newest first, cursor-paginated."""
        query = SessionSearchSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        search = query.validated_data.get("search", "")
        if search:
            sessions = sessions_titled(user=request.user, query=search[:200])
        else:
            sessions = sessions_of(user=request.user)
        paginator = NewestFirst()
        page = paginator.paginate_queryset(sessions, request, view=self)
        return paginator.get_paginated_response(SessionSerializer(page, many=True).data)

    @extend_schema(
        operation_id="sessions_create",
        request=SessionSerializer,
        responses={201: SessionSerializer, 409: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Create a session (the client may choose its UUID; repeating it returns the same)."""
        serializer = SessionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        session = session_create(
            user=request.user,
            session_id=serializer.validated_data.get("id"),
            title=serializer.validated_data.get("title", ""),
        )
        return Response(SessionSerializer(session).data, status=status.HTTP_201_CREATED)


class SessionDetailView(APIView):
    """One of the user's sessions."""

    @extend_schema(operation_id="sessions_retrieve", responses={200: SessionSerializer, **ERRORS})
    def get(self, request: Request, session_id: uuid.UUID) -> Response:
        """The session."""
        return Response(SessionSerializer(access_session(request.user, session_id)).data)

    @extend_schema(
        operation_id="sessions_rename",
        request=SessionRenameSerializer,
        responses={200: SessionSerializer, **ERRORS},
    )
    def patch(self, request: Request, session_id: uuid.UUID) -> Response:
        """Rename the session; without a `title` nothing changes."""
        session = access_session(request.user, session_id)
        serializer = SessionRenameSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if "title" in serializer.validated_data:
            session = session_rename(session=session, title=serializer.validated_data["title"])
        return Response(SessionSerializer(session).data)

    @extend_schema(operation_id="sessions_destroy", responses={204: None, **ERRORS})
    def delete(self, request: Request, session_id: uuid.UUID) -> Response:
        """Delete the session and its messages (a running turn is stopped)."""
        session_delete(session=access_session(request.user, session_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MessageListView(APIView):
    """A session's messages: list, and send a new one."""

    throttle_scope = "send"

    def get_throttles(self) -> list[Any]:
        """Sending has its own, tighter rate; reading the default one."""
        throttles = super().get_throttles()
        return [*throttles, ScopedRateThrottle()] if self.request.method == "POST" else throttles

    @extend_schema(
        operation_id="messages_list",
        parameters=[OpenApiParameter("cursor", str, description="From a page's next link.")],
        responses={200: MessagePageSerializer, **ERRORS},
    )
    def get(self, request: Request, session_id: uuid.UUID) -> Response:
        """Messages in order, with agent tags, cursor-paginated."""
        session = access_session(request.user, session_id)
        paginator = InOrder()
        page = paginator.paginate_queryset(session_messages(session=session), request, view=self)
        return paginator.get_paginated_response(MessageSerializer(page, many=True).data)

    @extend_schema(
        operation_id="messages_send",
        request=MessageSendSerializer,
        responses={202: MessageAcceptedSerializer, 409: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request, session_id: uuid.UUID) -> Response:
        """Send a message: 202 with the message and the run answering it. A new session id
        creates the session; the same message `id` again changes nothing."""
        serializer = MessageSendSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data.get("timezone"):
            preference_set_timezone(user=request.user, timezone_name=data["timezone"])
        sent = turn_start(
            user=request.user,
            session_id=session_id,
            message_id=data.get("id") or uuid.uuid4(),
            text=data["text"],
            flags={"force_strict": data["force_strict"], "force_guide": data["force_guide"]},
            language=request.LANGUAGE_CODE,  # LocaleMiddleware: the cookie, else Accept-Language
        )
        body = {
            "message": MessageSerializer(sent.message).data,
            "run_id": sent.run.id if sent.run else None,
            "duplicate": not sent.created,
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)


class TokenListView(APIView):
    """The user's API tokens."""

    @extend_schema(
        operation_id="tokens_list", responses={200: TokenSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        """Own tokens (never their secrets)."""
        return Response(TokenSerializer(request.user.api_tokens.all(), many=True).data)

    @extend_schema(
        operation_id="tokens_create",
        request=TokenCreateSerializer,
        responses={201: TokenCreatedSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        """Create a token; its secret is in this answer only."""
        serializer = TokenCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, raw = token_create(user=request.user, name=serializer.validated_data["name"])
        token.token = raw
        return Response(TokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)


class TokenDetailView(APIView):
    """One of the user's tokens."""

    @extend_schema(operation_id="tokens_revoke", responses={204: None, **ERRORS})
    def delete(self, request: Request, token_id: int) -> Response:
        """Revoke the token."""
        token = ApiToken.objects.filter(pk=token_id, user=request.user).first()
        if token is None:
            raise NotFound("token")
        token_revoke(token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)
