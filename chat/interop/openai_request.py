"""A chat-completions request of the OpenAI API, checked and turned into one message of a turn."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

# A session picked by the request's `user` field is this user's, named from it (uuid5).
USER_SESSIONS = uuid.UUID("0b7f2c55-37a1-4f7e-9a43-5d2c0e6a1f10")
ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
USER_FIELD_MAX = 256


class RequestRefused(Exception):
    """A request this API cannot take: a plain message for the caller, and its `param`."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param = message, param


@dataclass(frozen=True)
class CompletionRequest:
    """What a chat-completions request asks of us."""

    model: str
    messages: list[tuple[str, str]]  # (role, text), in order
    stream: bool
    include_usage: bool
    agent_events: bool  # the `x_agent_events` extension: every agent's tagged events too
    user: str

    @property
    def question(self) -> str:
        """The last message: the user's, which the turn answers."""
        return self.messages[-1][1]

    def text_for(self, *, fresh: bool) -> str:
        """The message the turn starts with: the question alone in a session that has its own
        history; in a new one, the question and then the conversation the client sent before
        it (system prompts are the agent's own, and are left out)."""
        earlier = [
            (role, text) for role, text in self.messages[:-1] if role in ("user", "assistant")
        ]
        if not fresh or not earlier:
            return self.question
        lines = [f"{'User' if role == 'user' else 'Assistant'}: {text}" for role, text in earlier]
        return f"{self.question}\n\n---\nEarlier in this conversation:\n" + "\n".join(lines)


def completion_request(body: bytes) -> CompletionRequest:
    """The request parsed and checked; RequestRefused says what is wrong."""
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise RequestRefused(_("The body is not valid JSON.")) from None
    if not isinstance(data, dict):
        raise RequestRefused(_("The body must be a JSON object."))
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise RequestRefused(
            _("Name the agent to ask in `model` (GET /models lists them)."), "model"
        )
    messages = [_message(m, i) for i, m in enumerate(_list(data.get("messages")))]
    if not messages or messages[-1][0] != "user" or not messages[-1][1].strip():
        raise RequestRefused(_("The last message must be the user's, with text."), "messages")
    stream = _flag(data, "stream")
    options = data.get("stream_options") or {}
    if not isinstance(options, dict):
        raise RequestRefused(_("`stream_options` must be an object."), "stream_options")
    user = data.get("user") or ""
    if not isinstance(user, str) or len(user) > USER_FIELD_MAX or "\x00" in user:
        message = _("`user` must be text of at most %(limit)s characters.")
        raise RequestRefused(message % {"limit": USER_FIELD_MAX}, "user")
    return CompletionRequest(
        model=model.strip(),
        messages=messages,
        stream=stream,
        include_usage=_flag(options, "include_usage"),
        agent_events=_flag(data, "x_agent_events"),
        user=user,
    )


def session_for(
    request: CompletionRequest, *, user_pk: Any, header: str | None
) -> uuid.UUID | None:
    """The session the request continues: the `X-Session-Id` header's, else one named by the
    `user` field (per platform user), else None (a new session)."""
    if header:
        try:
            return uuid.UUID(header)
        except ValueError:
            raise RequestRefused(_("X-Session-Id must be a UUID."), "X-Session-Id") from None
    if request.user:
        return uuid.uuid5(USER_SESSIONS, f"{user_pk}/{request.user}")
    return None


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise RequestRefused(_("`messages` must be a list of messages."), "messages")
    return value


def _message(value: Any, index: int) -> tuple[str, str]:
    """(role, text) of one message; text parts are joined, other parts refused."""
    param = f"messages[{index}]"
    if not isinstance(value, dict) or value.get("role") not in ROLES:
        raise RequestRefused(_("Each message needs a known `role`."), param)
    content = value.get("content")
    if content is None:
        return value["role"], ""
    if isinstance(content, str):
        return value["role"], content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise RequestRefused(_("Only text content is supported for now."), param)
            if not isinstance(part.get("text"), str):
                raise RequestRefused(_("A text part needs its `text`."), param)
            texts.append(part["text"])
        return value["role"], "\n".join(texts)
    raise RequestRefused(_("`content` must be text or a list of text parts."), param)


def _flag(data: dict[str, Any], name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise RequestRefused(_("`%(name)s` must be true or false.") % {"name": name}, name)
    return value
