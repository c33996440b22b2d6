"""The chat websocket: parses client frames, authorizes, calls one service, relays events."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import uuid
from types import SimpleNamespace
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from rest_framework.throttling import SimpleRateThrottle

from chat.events import INBOX_ALL, envelope, inbox_group, session_group, user_group
from chat.metrics import CONNECTIONS
from chat.models import ChatSession
from chat.relay import LAYER_ERRORS, PROBE_TYPE, RelayProbe
from chat.selectors import access_session, message_as_event_data
from chat.services import preference_set_timezone
from config.errors import AppError, NotFound
from delegation.humans.decisions import item_cancel, item_decide, items_close_stopped
from delegation.humans.selectors import access_inbox_item
from delegation.selectors import access_run, session_history
from delegation.turns import session_snapshot_turns, turn_start, turn_stop

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
# The channel layer failed, or forgot this socket's groups (chat/relay.py): the client
# reconnects and re-joins. (1011 is not an option: daphne's websocket library accepts only 1000
# and 3000-4999 from applications; 4503 mirrors HTTP 503 as 4401 mirrors 401.) LAYER_ERRORS
# close the socket with it and the reason logged, without a traceback.
CLOSE_RELAY_FAILED = 4503


def _uuid(frame: dict[str, Any], key: str) -> uuid.UUID:
    value = frame.get(key)
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    message = _("'%(field)s' must be a UUID string.") % {"field": key}
    raise AppError("invalid", message, details={key: "not a UUID"})


def page_language(scope: dict[str, Any]) -> str:
    """The language of the page a socket comes from, read as LocaleMiddleware reads a request:
    the language the user chose (its cookie), else the browser's Accept-Language."""
    headers = dict(scope.get("headers") or ())
    accept = headers.get(b"accept-language", b"").decode("latin-1")
    request = SimpleNamespace(
        COOKIES=scope.get("cookies") or {}, META={"HTTP_ACCEPT_LANGUAGE": accept}
    )
    return translation.get_language_from_request(request)


def _log_relay_failed(scope: dict[str, Any], reason: str) -> None:
    user = scope.get("user")
    logger.warning(
        "websocket of user %s closed (%s): channel layer failed: %s",
        getattr(user, "pk", None),
        CLOSE_RELAY_FAILED,
        reason,
    )


class BadFrame(AppError):
    """A frame that is not a well-formed protocol frame (logged at warning, no traceback)."""


class SendThrottle(SimpleRateThrottle):
    """The REST API's "send" scope for websocket sends: same rate, same cache key per user."""

    scope = "send"

    def get_cache_key(self, request: Any, view: Any) -> str:
        """The key ScopedRateThrottle uses for an authenticated user."""
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}

    def allow_user(self, user: Any) -> bool:
        """Count one send by `user`; False when over the rate."""
        return self.allow_request(SimpleNamespace(user=user), None)


def _parse(text_data: str | None) -> dict[str, Any]:
    """One JSON object frame with a string `type`, or BadFrame."""
    if text_data is None:
        raise BadFrame("bad_frame", _("Send JSON text frames, not binary."))
    if len(text_data.encode()) > settings.WS_MAX_FRAME_BYTES:
        raise BadFrame(
            "frame_too_large",
            _("Frames are limited to %(limit)s bytes.") % {"limit": settings.WS_MAX_FRAME_BYTES},
        )
    try:
        frame = json.loads(text_data)
    except json.JSONDecodeError as exc:
        # The parser's reason (exc.msg) is Python's and stays English.
        message = _("The frame is not valid JSON: %(reason)s.") % {"reason": exc.msg}
        raise BadFrame("bad_json", message) from None
    except RecursionError:
        raise BadFrame("bad_json", _("The frame is nested too deeply.")) from None
    if not isinstance(frame, dict):
        raise BadFrame("bad_json", _("The frame must be a JSON object."))
    try:  # JSON's \ud800 escapes can spell lone surrogates: no text, unstorable, unsendable
        json.dumps(frame, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise BadFrame("bad_json", _("The frame holds text that is not valid Unicode.")) from None
    if not isinstance(frame.get("type"), str):
        message = _("The frame needs a 'type' string.")
        raise BadFrame("bad_frame", message, details={"type": "string"})
    return frame


class ChatConsumer(AsyncWebsocketConsumer):
    """One browser tab: sends messages, joins sessions, stops runs, receives their events."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve the socket; a channel-layer failure closes it with 4503 and a logged reason."""
        try:
            await super().__call__(scope, receive, send)
        except LAYER_ERRORS as exc:
            _log_relay_failed(scope, f"{type(exc).__name__}: {exc}")
            # A client that is already gone makes this a no-op.
            await send({"type": "websocket.close", "code": CLOSE_RELAY_FAILED})

    async def connect(self) -> None:
        """Accept signed-in users; anyone else is accepted, then closed with 4401, so the page
        can tell "sign in again" from a failed handshake (closing before accepting is HTTP 403)."""
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.user = user
        self.language = page_language(self.scope)
        self.joined: set[str] = set()
        await self.accept()
        CONNECTIONS.labels(door="websocket").inc()
        groups = [user_group(user.pk), *await database_sync_to_async(self._inbox_groups)()]
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined.add(group)
        self.probe = RelayProbe(self.channel_layer, self.channel_name)
        await self.probe.join()
        self.watch = asyncio.create_task(self._watch_relay())

    async def _watch_relay(self) -> None:
        """Close with 4503 once a probe does not come back within RELAY_PROBE_SECONDS (Redis
        forgot this socket's groups) or cannot be sent: the page reconnects and re-joins."""
        try:
            while await self.probe.send_next():
                await asyncio.sleep(settings.RELAY_PROBE_SECONDS)
            reason = "its groups are gone (a probe did not come back)"
        except LAYER_ERRORS as exc:
            reason = f"{type(exc).__name__}: {exc}"
        _log_relay_failed(self.scope, reason)
        await self.close(code=CLOSE_RELAY_FAILED)

    def _inbox_groups(self) -> list[str]:
        """Staff sockets receive the inbox items they may decide (`inbox.*` events): a
        superuser every item, other staff the unassigned ones and their groups'."""
        if not self.user.is_staff:
            return []
        if self.user.is_superuser:
            return [INBOX_ALL]
        ids = self.user.groups.values_list("id", flat=True)
        return [inbox_group(None), *(inbox_group(group_id) for group_id in ids)]

    async def disconnect(self, code: int) -> None:
        """Stop probing, and leave every group this socket joined."""
        if hasattr(self, "joined"):  # a signed-in socket, counted when it connected
            CONNECTIONS.labels(door="websocket").dec()
        if hasattr(self, "watch"):
            self.watch.cancel()
            await self.probe.leave()
        for group in getattr(self, "joined", set()):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Handle one frame in the page's language: its error messages (and whatever the
        services it calls say) are in it. The activation is context-local and
        database_sync_to_async copies the context, so it reaches the services' threads too."""
        if not hasattr(self, "user"):
            return  # an anonymous socket, already closing with 4401
        with translation.override(self.language):
            await self._receive(text_data)

    async def _receive(self, text_data: str | None) -> None:
        """Parse one frame and dispatch it; any problem is answered with an `error` event."""
        frame: dict[str, Any] = {}
        try:
            frame = _parse(text_data)
            handler = self.INBOUND.get(frame["type"])
            if handler is None:
                raise BadFrame(
                    "unknown_type",
                    _("Unknown frame type %(type)s; expected one of %(types)s.")
                    % {"type": repr(frame["type"][:64]), "types": ", ".join(sorted(self.INBOUND))},
                )
            if handler is ChatConsumer.handle_message_send:
                await self._throttle_send()
            await handler(self, frame)
        except BadFrame as exc:
            logger.warning("bad frame from user %s: %s: %s", self.user.pk, exc.code, exc.message)
            await self._send_error(exc, frame)
        except AppError as exc:
            await self._send_error(exc, frame)
        except LAYER_ERRORS:
            raise  # closes the socket (see __call__): events could no longer reach it
        except Exception:
            logger.exception("chat frame failed")
            await self._send_error(
                AppError("internal_error", _("Something went wrong on our side.")), frame
            )

    async def _throttle_send(self) -> None:
        """REST's "send" rate (API_THROTTLE_SEND), on the same per-user counter."""
        throttle = SendThrottle()
        if not await database_sync_to_async(throttle.allow_user)(self.user):
            wait = max(1, math.ceil(throttle.wait() or 1))
            raise AppError(
                "throttled",
                _("You are sending messages too fast; retry in %(seconds)s s.") % {"seconds": wait},
                details={"retry_after": wait},
                status=429,
            )

    async def handle_message_send(self, frame: dict[str, Any]) -> None:
        """Store the user's message and start a turn (idempotent by message_id)."""
        session_id, message_id = _uuid(frame, "session_id"), _uuid(frame, "message_id")
        text = frame.get("text")
        if not isinstance(text, str):
            message = _("'%(field)s' must be a string.") % {"field": "text"}
            raise AppError("invalid", message, details={"text": "not a string"})
        if isinstance(frame.get("timezone"), str) and frame["timezone"]:
            await database_sync_to_async(preference_set_timezone)(
                user=self.user, timezone_name=frame["timezone"]
            )
        # Join before the turn starts so no early event is missed, but only a session that is
        # ours or new: another user's session is refused like a missing one.
        if await database_sync_to_async(self._foreign_session)(session_id):
            raise NotFound("session")
        await self._join(session_id)
        sent = await database_sync_to_async(turn_start)(
            user=self.user,
            session_id=session_id,
            message_id=message_id,
            text=text,
            flags={k: frame.get(k) is True for k in ("force_strict", "force_guide", "debug")},
            language=self.language,
        )
        if not sent.created:  # a retry: acknowledge again, start nothing
            await self._send_event(
                envelope(
                    "message.created",
                    session_id=session_id,
                    run_id=sent.run.id if sent.run else None,
                    message_id=message_id,
                    data={**message_as_event_data(sent.message), "duplicate": True},
                )
            )

    async def handle_session_join(self, frame: dict[str, Any]) -> None:
        """Subscribe to a session and receive its saved transcript plus in-flight messages."""
        session_id = _uuid(frame, "session_id")
        await database_sync_to_async(access_session)(self.user, session_id)
        await self._join(session_id)  # join first: events after the snapshot read are not missed
        snapshot = await database_sync_to_async(self._snapshot)(session_id)
        await self._send_event(envelope("session.snapshot", session_id=session_id, data=snapshot))

    async def handle_session_history(self, frame: dict[str, Any]) -> None:
        """Older messages of a session, the page before `before` (a message id), on demand."""
        session_id, before = _uuid(frame, "session_id"), _uuid(frame, "before")

        def history() -> dict[str, Any]:
            return session_history(session=access_session(self.user, session_id), before=before)

        page = await database_sync_to_async(history)()
        await self._send_event(envelope("session.history", session_id=session_id, data=page))

    async def handle_run_cancel(self, frame: dict[str, Any]) -> None:
        """Stop a running turn."""
        run_id = _uuid(frame, "run_id")

        def stop() -> None:
            run = access_run(self.user, run_id)
            turn_stop(run=run)
            items_close_stopped(run=run)  # its questions and approvals stop waiting

        await database_sync_to_async(stop)()

    async def handle_human_answer(self, frame: dict[str, Any]) -> None:
        """The end user answers a question their agent asked them (`ask_user`)."""
        item_id = _uuid(frame, "item_id")
        answer = frame.get("answer")
        if not isinstance(answer, str):
            message = _("'%(field)s' must be a string.") % {"field": "answer"}
            raise AppError("invalid", message, details={"answer": "not a string"})

        def decide() -> None:
            item = access_inbox_item(self.user, item_id)
            item_decide(item=item, user=self.user, decision="approve", answer=answer)

        await database_sync_to_async(decide)()

    async def handle_human_cancel(self, frame: dict[str, Any]) -> None:
        """The end user stops waiting for a person: the agent goes on without the answer."""
        item_id = _uuid(frame, "item_id")

        def cancel() -> None:
            item = access_inbox_item(self.user, item_id)
            item_cancel(item=item, user=self.user)

        await database_sync_to_async(cancel)()

    INBOUND = {
        "message.send": handle_message_send,
        "session.join": handle_session_join,
        "session.history": handle_session_history,
        "run.cancel": handle_run_cancel,
        "human.answer": handle_human_answer,
        "human.cancel": handle_human_cancel,
    }

    def _foreign_session(self, session_id: uuid.UUID) -> bool:
        return ChatSession.objects.filter(pk=session_id).exclude(user=self.user).exists()

    def _snapshot(self, session_id: uuid.UUID) -> dict[str, Any]:
        return session_snapshot_turns(session=access_session(self.user, session_id))

    async def _join(self, session_id: uuid.UUID) -> None:
        group = session_group(session_id)
        if group not in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined.add(group)

    async def _send_event(self, event: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(event, ensure_ascii=False))

    async def _send_error(self, exc: AppError, frame: dict[str, Any]) -> None:
        session_id = frame.get("session_id") if isinstance(frame.get("session_id"), str) else None
        request_type = frame.get("type") if isinstance(frame.get("type"), str) else None
        data = {**exc.as_dict(), "request_type": request_type and request_type[:64]}
        for key in ("message_id", "run_id"):
            if isinstance(frame.get(key), str):
                data[key] = frame[key][:64]
        await self._send_event(
            {
                "type": "error",
                "session_id": (session_id or "")[:64] or None,
                "run_id": None,
                "message_id": None,
                "agent": None,
                "seq": None,
                "data": data,
            }
        )

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Group events go straight to the browser. Channels runs close_old_connections (a
        thread hop) before every message; relaying touches no database, so events skip it
        (it was a third of the consumer's CPU). Frames from the browser still get it."""
        if message["type"] == PROBE_TYPE:
            self.probe.came_back()
            return
        handler = getattr(self, get_handler_name(message), None)
        if getattr(handler, "__func__", None) is ChatConsumer.relay:
            await self.relay(message)
        else:
            await super().dispatch(message)

    async def relay(self, message: dict[str, Any]) -> None:
        """Forward one event from the session group to the browser."""
        await self._send_event(message["event"])

    # One handler per event type the group carries (Channels maps "message.delta" to message_delta).
    message_created = message_started = message_delta = message_completed = relay
    tool_called = tool_result = tool_progress = delegation_started = delegation_completed = relay
    run_completed = reminder_due = error = session_snapshot = session_history = relay
    watch_notification = relay
    routing_decided = run_progress = relay
    run_waiting = run_resumed = message_assessed = inbox_new_item = inbox_item_decided = relay
