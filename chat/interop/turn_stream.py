"""One turn started for another platform's client, and its tree's events until the turn ends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from channels.db import database_sync_to_async

from chat.events import session_group
from chat.sse import Subscription, live
from delegation.turns.start import SentMessage, turn_start


class TurnStream:
    """Joins the session's events first (nothing emitted meanwhile is lost), then starts the
    turn as `user` (their rights, budgets and approvals, as on the page), then yields the events
    of the turn's runs (the entry agent's and every expert's below it) until the entry agent's
    `run.completed`, or the first `run.waiting` (a person must decide; the turn goes on without
    this client). None marks a quiet spell (for keepalives). `async with`, or `start` and
    `close`."""

    def __init__(
        self, *, user: Any, session_id: uuid.UUID, text: str, language: str, a2a_hops: int = 0
    ) -> None:
        self.user, self.session_id, self.text, self.language = user, session_id, text, language
        self.a2a_hops = a2a_hops  # the agent platforms the message came through (A2A)
        self.subscription = Subscription(session_group(session_id))
        self.sent: SentMessage | None = None

    async def __aenter__(self) -> TurnStream:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Join the session's events, then start the turn (AppError: refused, nothing kept)."""
        await self.subscription.join()
        try:
            self.sent = await database_sync_to_async(turn_start)(
                user=self.user,
                session_id=self.session_id,
                message_id=uuid.uuid4(),
                text=self.text,
                language=self.language,
                a2a_hops=self.a2a_hops,
            )
        except BaseException:
            await self.subscription.leave()
            raise

    async def close(self) -> None:
        """Stop following the turn (the turn itself goes on)."""
        await self.subscription.leave()

    @property
    def run_id(self) -> str:
        """The entry agent's run answering the message."""
        assert self.sent is not None and self.sent.run is not None  # (entered)
        return str(self.sent.run.id)

    async def events(self) -> AsyncIterator[dict[str, Any] | None]:
        """The turn's events in order (None: nothing for a keepalive's time)."""
        tree = {self.run_id}
        async with aclosing(live(self.subscription)) as messages:
            async for message in messages:
                if message is None:
                    yield None
                    continue
                event = message.get("event") or {}
                if event.get("run_id") not in tree:
                    continue
                if event.get("type") == "delegation.started":
                    child = (event.get("data") or {}).get("run_id")
                    if child:
                        tree.add(str(child))
                yield event
                if event.get("type") == "run.waiting" or (
                    event.get("type") == "run.completed" and event.get("run_id") == self.run_id
                ):
                    return
