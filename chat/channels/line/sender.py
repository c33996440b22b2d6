"""Messages to LINE through its official SDK: a reply while its token is fresh, else a push
with a retry key (LINE accepts a key once, so a retried push is never shown twice)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from linebot.v3.messaging import (
    ApiClient,
    ApiException,
    Configuration,
    MessageAction,
    MessagingApi,
    PushMessageRequest,
    QuickReply,
    QuickReplyItem,
    ReplyMessageRequest,
    ShowLoadingAnimationRequest,
    TextMessage,
)

from chat.channels.configured import TEXT_LIMITS
from chat.channels.errors import RateLimited
from chat.channels.models import Channel

logger = logging.getLogger(__name__)

TEXT_LIMIT = TEXT_LIMITS[Channel.LINE]
PER_REQUEST = 5  # messages in one reply or push
REPLY_SECONDS = 50  # a reply token is used only this soon after its event (LINE: about 1 min)
QUICK_REPLIES = 13  # buttons under one message
LABEL_LIMIT = 20  # characters of a button's label


def _api() -> tuple[ApiClient, MessagingApi]:
    client = ApiClient(
        Configuration(
            host=settings.LINE_API_BASE_URL, access_token=settings.LINE_CHANNEL_ACCESS_TOKEN
        )
    )
    return client, MessagingApi(client)


def line_send(
    reply: dict[str, Any],
    texts: list[str],
    *,
    retry_key: uuid.UUID,
    retry: bool,
    choices: Sequence[str] = (),
) -> None:
    """Send `texts` (each within TEXT_LIMIT) to the chat the event came from. The first five go
    as the reply while its token is fresh, the rest (or all, later) as pushes keyed by
    `retry_key`. `retry`: an earlier attempt may have sent them; a reply token LINE then calls
    invalid was used by it. `choices`: quick-reply buttons under the last text (a tap sends
    the choice as the user's message)."""
    batches = [texts[i : i + PER_REQUEST] for i in range(0, len(texts), PER_REQUEST)]
    fresh = time.time() * 1000 - float(reply.get("at_ms") or 0) < REPLY_SECONDS * 1000
    client, api = _api()
    with client:
        for number, batch in enumerate(batches):
            messages = [TextMessage(text=text) for text in batch]  # type: ignore[call-arg]
            if choices and number == len(batches) - 1:
                messages[-1].quick_reply = _quick_reply(choices)
            replied = number == 0 and fresh and reply.get("token")
            if replied and _reply(api, reply["token"], messages, retry=retry):
                continue
            key = uuid.uuid5(retry_key, str(number))
            _push(api, reply["to"], messages, key)


def _quick_reply(choices: Sequence[str]) -> QuickReply:
    """Buttons that send each choice as the user's message (labels cut to LINE's limit)."""
    items = [
        QuickReplyItem(action=MessageAction(label=choice[:LABEL_LIMIT], text=choice))  # type: ignore[call-arg]
        for choice in choices[:QUICK_REPLIES]
    ]
    return QuickReply(items=items)


def _reply(api: MessagingApi, token: str, messages: list[TextMessage], *, retry: bool) -> bool:
    """True once the reply is LINE's; False when the token no longer serves (push instead)."""
    try:
        api.reply_message(ReplyMessageRequest(reply_token=token, messages=messages))  # type: ignore[call-arg]
        return True
    except ApiException as exc:
        if exc.status == 429:
            raise RateLimited(str(exc.body)) from exc
        if exc.status == 400 and retry:
            return True  # the earlier attempt used the token: the reply was sent
        if exc.status == 400:
            return False
        raise


def _push(api: MessagingApi, to: str, messages: list[TextMessage], key: uuid.UUID) -> None:
    try:
        api.push_message(PushMessageRequest(to=to, messages=messages), x_line_retry_key=str(key))  # type: ignore[call-arg]
    except ApiException as exc:
        if exc.status == 409:  # this key was accepted before: the messages were sent
            return
        if exc.status == 429:
            raise RateLimited(str(exc.body)) from exc
        raise


def line_show_working(reply: dict[str, Any]) -> None:
    """LINE's loading animation in a one-to-one chat while the agents work (best effort)."""
    to = str(reply.get("to") or "")
    if not to.startswith("U"):  # groups and rooms have no loading animation
        return
    client, api = _api()
    try:
        with client:
            api.show_loading_animation(
                ShowLoadingAnimationRequest(chatId=to, loadingSeconds=60)  # type: ignore[call-arg]
            )
    except ApiException as exc:
        logger.info("LINE loading animation refused: %s", exc.status)
