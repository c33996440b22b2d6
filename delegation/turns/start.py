"""Starting a turn: a user's message (or a scheduled prompt) becomes the entry agent's run."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from agents.models import Agent
from agents.selectors import agent_entry_for, agent_to_pin, agent_usable_by
from chat.events import emit, envelope
from chat.models import ChatMessage, ChatSession, MessageOrigin, MessageRole
from chat.selectors import message_as_event_data
from config.db.prepared import PreparedInsert, PreparedLookup, PreparedSave
from config.errors import AppError, NotFound
from config.text import reply_language
from delegation.models import Run
from delegation.runs.claim import run_enqueue
from delegation.runs.create import run_create
from delegation.turns.history import branch_history
from delegation.turns.parked import session_turns

ROUTING_FLAGS = ("force_strict", "force_guide", "debug")


@dataclass(frozen=True)
class SentMessage:
    """The stored user message, the run answering it, and whether this call created them."""

    message: ChatMessage
    run: Run | None
    created: bool


def turn_start(
    *,
    user: Any,
    session_id: uuid.UUID,
    message_id: uuid.UUID,
    text: str,
    flags: dict[str, bool] | None = None,
    origin: str = MessageOrigin.TYPED,
    language: str = "",
    a2a_hops: int = 0,
) -> SentMessage:
    """Store the user's message and start the entry agent on it; a repeated id changes nothing.

    `flags`: `force_strict` / `force_guide` (routing overrides) and `debug` (a staff user's
    socket gets the `routing.decided` event). `origin`: "scheduled" for a scheduled prompt.
    `language`: the page's language; the reply is in the message's own language, else that.
    `a2a_hops`: the agent platforms the message came through (our A2A server's turns).
    """
    if origin not in MessageOrigin.values:
        raise ValueError(f"unknown message origin {origin!r}")
    return retried_on_conflict(
        _start,
        user=user,
        session_id=session_id,
        message_id=message_id,
        text=clean_text(text),
        flags=routing_flags(flags),
        origin=origin,
        language=language,
        a2a_hops=a2a_hops,
    )


def retried_on_conflict(store: Callable[..., SentMessage], **fields: Any) -> SentMessage:
    """`store(**fields)`, once more if a concurrent request with the same message id won the
    insert (the second try finds that message and returns it); a second conflict is raised."""
    try:
        return store(**fields)
    except IntegrityError:
        return store(**fields)


def routing_flags(flags: dict[str, bool] | None) -> dict[str, bool]:
    """The routing flags a turn was sent with (force_strict, force_guide, debug), set ones only."""
    return {k: bool(v) for k, v in (flags or {}).items() if k in ROUTING_FLAGS and v}


def clean_text(text: str) -> str:
    """The message text, trimmed; empty, NUL-carrying or too long text is refused."""
    text = text.strip()
    if not text:
        raise AppError("empty_message", _("The message is empty."))
    if "\x00" in text:
        message = _("The message contains a NUL character.")
        raise AppError("invalid", message, details={"text": "NUL"})
    if len(text) > settings.CHAT_MAX_MESSAGE_CHARS:
        raise AppError(
            "message_too_long",
            _("The message is %(length)s characters; the limit is %(limit)s.")
            % {"length": len(text), "limit": settings.CHAT_MAX_MESSAGE_CHARS},
        )
    return text


# A turn's start reads and writes these at every message: compiled once per connection.
_SESSION_LOCKED = PreparedLookup(
    lambda pk: ChatSession.objects.select_for_update().filter(pk=pk), keys=[ChatSession._meta.pk]
)
_MESSAGE = PreparedLookup(
    lambda pk: ChatMessage.objects.filter(pk=pk).select_related("session"),
    keys=[ChatMessage._meta.pk],
)

_NEW_SESSION = PreparedInsert(ChatSession)
_TOUCH = PreparedSave(ChatSession, "title", "updated_at")
_NEW_MESSAGE = PreparedInsert(ChatMessage)


@transaction.atomic
def _start(
    *,
    user: Any,
    session_id: uuid.UUID,
    message_id: uuid.UUID,
    text: str,
    flags: dict[str, bool],
    origin: str,
    language: str,
    a2a_hops: int = 0,
) -> SentMessage:
    existing = existing_message(user=user, session_id=session_id, message_id=message_id)
    if existing is not None:
        return existing
    session = _SESSION_LOCKED.row(session_id)
    fresh = session is None  # created here: no earlier turn, nothing running, no history
    if session is None:
        agent = agent_entry_for(user=user)
        session = _NEW_SESSION.insert(
            ChatSession(id=session_id, user=user, agent=agent, title=title_from(text))
        )
    elif session.user_id != user.pk:
        raise NotFound("session")
    else:
        agent = session_agent(session=session, user=user)
    if not fresh:
        ensure_no_turn_running(session)
    message = _NEW_MESSAGE.insert(
        ChatMessage(
            id=message_id, session=session, role=MessageRole.USER, content=text, origin=origin
        )
    )
    run = turn_begin(
        session=session,
        agent=agent,
        user=user,
        message=message,
        flags=flags,
        fresh=fresh,
        language=language,
        a2a_hops=a2a_hops,
    )
    if not fresh:  # the session moves up the user's list (a new one is named and dated)
        if not session.title:  # a session created empty is named after its first message
            session.title = title_from(text)
        _TOUCH.save(session)
    return SentMessage(message, run, True)


def existing_message(
    *, user: Any, session_id: uuid.UUID, message_id: uuid.UUID
) -> SentMessage | None:
    """A message already stored under this id (a retry), or None; another's id conflicts."""
    existing = _MESSAGE.row(message_id)
    if existing is None:
        return None
    if existing.session.user_id != user.pk or existing.session_id != session_id:
        message = _("That message id is already in use.")
        raise AppError("message_id_conflict", message, status=409)
    run = Run.objects.filter(user_message=existing, parent__isnull=True).order_by("-created_at")
    return SentMessage(existing, run.first(), False)


def ensure_no_turn_running(session: ChatSession) -> None:
    """AppError `turn_in_progress` (409) while an earlier turn of the session still works. A
    turn parked on a person (every unfinished run of it waits for an approval or an answer)
    does not count: the user chats on, and that turn resumes on its own when the person
    decides. A turn that asked the user a question waits for their answer in its card.
    (The caller holds the session's row lock: two sends cannot both pass.)"""
    turns = session_turns(session=session)
    if turns.asking and turns.asking == turns.running:
        raise AppError(
            "turn_in_progress",
            _("The agent asked you a question: answer it above, or cancel it, first."),
            status=409,
        )
    if turns.running:
        raise AppError(
            "turn_in_progress",
            _("The agent is still answering your previous message; wait or stop it."),
            status=409,
        )


def ensure_no_turn_unfinished(session: ChatSession) -> None:
    """AppError `turn_in_progress` (409) while any turn of the session is unfinished, one
    parked on a person included: trying a message again or editing it rewrites the branch
    that turn would answer into."""
    ensure_no_turn_running(session)
    if session_turns(session=session).parked:
        raise AppError(
            "turn_in_progress",
            _(
                "An earlier message of this chat is waiting for a person; cancel that request "
                "or wait for its answer first."
            ),
            status=409,
        )


def turn_begin(
    *,
    session: ChatSession,
    agent: Agent,
    user: Any,
    message: ChatMessage,
    flags: dict[str, bool],
    announce: bool = True,
    since: ChatMessage | None = None,
    fresh: bool = False,
    language: str = "",
    a2a_hops: int = 0,
) -> Run:
    """The root run answering `message` with the history of its branch before it (or before
    `since`, the message it replaces), announced with `message.created`, queued after commit.
    `fresh`: the session was created for this message (it has no history to read); `language`:
    the page's, for a message whose words do not tell (see reply_language)."""
    history = [] if fresh else branch_history(session=session, before=since or message)
    run = run_create(
        agent=agent,
        user=user,
        session=session,
        task=message.content,
        transcript=[*history, {"role": "user", "content": message.content}],
        user_message=message,
        routing_request=flags,
        language=reply_language(message.content, language),
        a2a_hops=a2a_hops,
    )
    if announce:
        emit(
            envelope(
                "message.created",
                session_id=session.id,
                run_id=run.id,
                message_id=message.id,
                data=message_as_event_data(message),
            )
        )
    run_enqueue(run_id=run.id)
    return run


_COURTESY = re.compile(
    r"^(?:(?:hi|hey|hello)\b[,!\s]*|please\s+|(?:can|could|would) you(?: please)?\s+|"
    r"請問|请问|麻煩你|麻烦你|麻煩|麻烦|請|请)+",
    re.IGNORECASE,
)
_HAN = re.compile(r"[\u3400-\u9fff]")
TITLE_CHARS, TITLE_HAN_CHARS = 42, 18


def title_from(text: str) -> str:
    """A short chat title from a first message: its first line without greetings and
    courtesies, at most 42 characters (18 Chinese ones), cut at a word."""
    line = " ".join((text.strip().splitlines() or [""])[0].split())
    short = _COURTESY.sub("", line).strip(" ,.，。?？!！") or line
    limit = TITLE_HAN_CHARS if _HAN.search(short) else TITLE_CHARS
    if len(short) > limit:
        cut = short[: limit - 1]
        if not _HAN.search(short) and " " in cut:
            cut = cut.rsplit(" ", 1)[0]
        short = cut.rstrip(" ,.;:，。") + "…"
    return short[:1].upper() + short[1:]


def session_agent(*, session: ChatSession, user: Any) -> Agent:
    """The agent the session talks to; if it was disabled or closed to the user, the entry agent."""
    agent = agent_to_pin(agent_id=session.agent_id) if session.agent_id else None
    if agent is not None and agent.enabled and agent_usable_by(agent=agent, user=user):
        return agent
    return agent_entry_for(user=user)
