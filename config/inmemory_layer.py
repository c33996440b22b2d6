"""An in-memory channel layer that worker threads may send to safely (embedded mode only)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from channels.layers import InMemoryChannelLayer

# How often expired messages and group memberships are swept. Channels sweeps on every send and
# receive, walking every channel and membership of the process: with a thousand open sockets
# that made each relayed event cost a thousand-step loop. Messages expire after a minute and
# memberships after a day, so a sweep a second changes nothing anyone can see.
CLEAN_INTERVAL_SECONDS = 1.0


class ThreadSafeInMemoryChannelLayer(InMemoryChannelLayer):
    """Queues live on the server's event loop; sends from other threads are marshalled onto it.

    Channels' InMemoryChannelLayer wakes receivers through asyncio futures that belong to the
    server loop. The in-process task pool sends from its own threads (through async_to_sync, which
    gives them a private loop), which would set those futures from the wrong thread. This layer
    remembers the loop its receivers wait on and runs every send there.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._home_loop: asyncio.AbstractEventLoop | None = None
        self._outbox: list[tuple[str, dict[str, Any]]] = []  # sent from threads, not yet queued
        self._outbox_lock = threading.Lock()
        self._wake_loop: asyncio.AbstractEventLoop | None = None  # a _deliver is due there
        self._cleaned_at = float("-inf")

    def _clean_expired(self) -> None:
        """Channels' sweep of expired messages and memberships, at most once a second."""
        now = time.monotonic()
        if now - self._cleaned_at >= CLEAN_INTERVAL_SECONDS:
            self._cleaned_at = now
            super()._clean_expired()

    def _remember_loop(self) -> None:
        # The newest receiver's loop is home: one server loop in production, one per test.
        self._home_loop = asyncio.get_running_loop()

    def _foreign_loop(self) -> asyncio.AbstractEventLoop | None:
        home = self._home_loop
        if home is None or home.is_closed() or not home.is_running():
            return None
        return None if home is asyncio.get_running_loop() else home

    async def _on_home(self, coro: Any) -> Any:
        home = self._foreign_loop()
        if home is None:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, home))

    async def receive(self, channel: str) -> Any:
        self._remember_loop()
        return await super().receive(channel)

    async def group_add(self, group: str, channel: str) -> None:
        self._remember_loop()
        await super().group_add(group, channel)

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        await self._on_home(super().send(channel, message))

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        await self._on_home(super().group_send(group, message))

    def group_send_threadsafe(self, group: str, message: dict[str, Any]) -> bool:
        """Send from any thread without waiting: queued on the home loop in the order sent, with
        one wake-up of that loop per burst (not per event). False when no receiver has a loop
        (nobody can be listening yet)."""
        home = self._home_loop
        if home is None or home.is_closed() or not home.is_running():
            return False
        with self._outbox_lock:
            self._outbox.append((group, message))
            if self._wake_loop is home:
                return True  # a wake-up already due on this loop takes this one too
            self._wake_loop = home
        try:
            home.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop closed in between: nobody is listening any more
            with self._outbox_lock:
                self._outbox.clear()
                self._wake_loop = None
        return True

    def _deliver(self) -> None:
        with self._outbox_lock:
            batch, self._outbox = self._outbox, []
            self._wake_loop = None
        loop = asyncio.get_running_loop()
        for group, message in batch:
            # Tasks start in the order created, and so do the per-channel sends each one
            # creates: every receiver gets the events in the order they were sent.
            loop.create_task(InMemoryChannelLayer.group_send(self, group, message))

    def flush_threadsafe(self, timeout: float) -> None:
        """Wait until what was sent from threads so far is in the receivers' queues."""
        home = self._home_loop
        if home is None or home.is_closed() or not home.is_running():
            return
        done = threading.Event()

        def later(turns: int) -> None:  # a few loop turns: send task, then per-channel sends
            if turns:
                asyncio.get_running_loop().call_soon(later, turns - 1)
            else:
                done.set()

        # Runs after any _deliver scheduled before it (the loop runs callbacks in order).
        home.call_soon_threadsafe(later, 4)
        done.wait(timeout)
