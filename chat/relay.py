"""What relaying events needs to know of the channel layer: its errors, and a probe that tells
whether a socket's or stream's group memberships still exist.

Redis keeps group memberships in memory: a restart forgets them without a word, and a socket
would stay open and silent. So each socket and stream sends itself a probe through a group of
its own every RELAY_PROBE_SECONDS; one that never came back means its groups are gone, and it
closes (4503; an SSE stream ends with `stream_interrupted`) for the client to reconnect, re-join
and read a fresh snapshot.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from channels.exceptions import ChannelFull
from redis.exceptions import RedisError

# What a failing channel layer raises (Redis down or restarting, a full channel).
LAYER_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, ChannelFull)

PROBE_TYPE = "relay.probe"


class RelayProbe:
    """One socket's or stream's probe: a private group its channel joins, and whether the last
    probe sent through it came back."""

    def __init__(self, layer: Any, channel: str) -> None:
        self.layer = layer
        self.channel = channel
        self.group = f"relay.probe.{uuid.uuid4().hex}"
        self.waiting = False  # a probe is out and has not come back

    async def join(self) -> None:
        """Join the private group (raises LAYER_ERRORS when the layer is down)."""
        await self.layer.group_add(self.group, self.channel)

    async def leave(self) -> None:
        """Leave the private group; a failing layer forgets it anyway."""
        with contextlib.suppress(*LAYER_ERRORS):
            await self.layer.group_discard(self.group, self.channel)

    async def send_next(self) -> bool:
        """Send the next probe; False (nothing sent) while the last one has not come back:
        the channel's groups are gone."""
        if self.waiting:
            return False
        self.waiting = True
        await self.layer.group_send(self.group, {"type": PROBE_TYPE})
        return True

    def came_back(self) -> None:
        """A message of PROBE_TYPE arrived: the next probe may go."""
        self.waiting = False
