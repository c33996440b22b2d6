"""The embedded channel layer sweeps expired messages once a second, not on every event."""

from __future__ import annotations

import pytest

from config.inmemory_layer import CLEAN_INTERVAL_SECONDS, ThreadSafeInMemoryChannelLayer


@pytest.mark.asyncio
async def test_expired_messages_are_swept_at_most_once_per_interval():
    layer = ThreadSafeInMemoryChannelLayer(expiry=0)  # every message expires at once
    await layer.group_add("session", "reader.one")
    await layer.group_send("session", {"type": "x"})  # sweeps first (nothing yet), then sends
    await layer.group_send("session", {"type": "x"})  # within the interval: no sweep
    assert layer.channels["reader.one"].qsize() == 2  # both expired, both still queued

    layer._cleaned_at -= CLEAN_INTERVAL_SECONDS  # as if a second had passed
    await layer.group_send("other", {"type": "x"})  # this one sweeps
    assert "reader.one" not in layer.channels  # expired messages gone, and the membership
    assert "reader.one" not in layer.groups.get("session", {})


@pytest.mark.asyncio
async def test_a_live_message_is_received_whatever_the_sweep():
    layer = ThreadSafeInMemoryChannelLayer()
    await layer.group_add("session", "reader.one")
    await layer.group_send("session", {"type": "message.delta", "text": "hi"})
    assert (await layer.receive("reader.one"))["text"] == "hi"
