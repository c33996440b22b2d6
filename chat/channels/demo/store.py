"""What the demo's LINE phones show: each demo account's chat (its messages and the bot's),
its loading animation, and the reply tokens the phone handed out; kept in the cache."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.cache import cache

from chat.channels.models import Channel, ChannelLink

CHAT_KEY = "demo-line-chat:{}"
TOKEN_KEY = "demo-line-reply:{}"
LOADING_KEY = "demo-line-loading:{}"
KEPT_SECONDS = 24 * 3600
KEPT_MESSAGES = 200  # the newest of a chat


def demo_line_account(user: Any) -> str:
    """The demo LINE account of a platform user (LINE's form: "U" and 32 hex digits)."""
    return "U" + hashlib.sha256(f"demo-line:{user.pk}".encode()).hexdigest()[:32]


def demo_line_seed(*, username: str) -> str:
    """Link the user's demo LINE account to them (the demo's user writes at once); its id."""
    user = get_user_model().objects.get(username=username)
    account = demo_line_account(user)
    ChannelLink.objects.get_or_create(
        channel=Channel.LINE, external_id=account, defaults={"user": user}
    )
    return account


def chat_of(account: str) -> list[dict[str, Any]]:
    """The account's chat, oldest first: {"side": "me" or "bot", "text", "choices", "at"}."""
    return list(cache.get(CHAT_KEY.format(account)) or [])


def chat_add(account: str, side: str, text: str, choices: list[str] | None = None) -> None:
    """Add a message to the account's chat (and the bot answering ends its animation)."""
    entry = {"side": side, "text": text, "choices": choices or [], "at": time.time()}
    chat = [*chat_of(account), entry][-KEPT_MESSAGES:]
    cache.set(CHAT_KEY.format(account), chat, KEPT_SECONDS)
    if side == "bot":
        cache.delete(LOADING_KEY.format(account))


def loading_start(account: str, seconds: int) -> None:
    """The bot's loading animation in the account's chat, for up to `seconds`."""
    cache.set(LOADING_KEY.format(account), 1, max(5, min(int(seconds), 60)))


def loading(account: str) -> bool:
    """Whether the account's chat shows the loading animation now."""
    return bool(cache.get(LOADING_KEY.format(account)))


def reply_token_issue(account: str, token: str) -> None:
    """Remember which chat a reply token answers (LINE: usable once, for about a minute)."""
    cache.set(TOKEN_KEY.format(token), account, 60)


def reply_token_use(token: str) -> str | None:
    """The chat a reply token answers, once; None if unknown, used or too old."""
    key = TOKEN_KEY.format(token)
    account = cache.get(key)
    cache.delete(key)
    return account
