"""An in-memory channel layer that worker threads may send to safely (embedded mode only)."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import InMemoryChannelLayer


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
