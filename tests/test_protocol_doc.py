"""docs/protocol.md is the contract: every event type and error code the code can emit is in it."""

from __future__ import annotations

import re
from pathlib import Path

from chat.consumers import ChatConsumer
from chat.events import EVENT_TYPES
from config.errors import ERROR_CODES

DOC = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text()


def _table_keys(heading: str) -> set[str]:
    section = DOC.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return set(re.findall(r"^\| `([a-z_.]+)` \|", section, re.MULTILINE))


def test_every_event_type_is_documented_and_nothing_more():
    assert _table_keys("## Server → client events") == set(EVENT_TYPES)


def test_every_error_code_is_documented_and_nothing_more():
    assert _table_keys("## Error codes") == set(ERROR_CODES)


def test_every_inbound_frame_type_is_documented():
    assert _table_keys("## Client → server frames") == set(ChatConsumer.INBOUND)


def test_consumer_relays_every_event_type():
    for event_type in EVENT_TYPES:
        assert callable(getattr(ChatConsumer, event_type.replace(".", "_"), None)), event_type
