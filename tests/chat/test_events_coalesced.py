"""A sender that fell behind joins each message's queued deltas into one, in order, and never
across another event of the same session or another message."""

from __future__ import annotations

import uuid
from typing import Any

from chat.events import coalesced, envelope

RUN = uuid.uuid4()


def delta(message: uuid.UUID, seq: int, text: str, offset: int, session: str = "s1") -> Any:
    event = envelope(
        "message.delta",
        session_id=session,
        run_id=RUN,
        message_id=message,
        agent=None,
        seq=seq,
        data={"text": text, "offset": offset},
    )
    return (f"chat.{session}", event)


def other(kind: str, message: uuid.UUID, seq: int, session: str = "s1") -> Any:
    event = envelope(
        kind, session_id=session, run_id=RUN, message_id=message, agent=None, seq=seq, data={}
    )
    return (f"chat.{session}", event)


def shown(events: list[Any]) -> list[tuple[str, str, Any, Any]]:
    return [
        (g, e["type"], e["seq"], (e["data"].get("text"), e["data"].get("offset")))
        for g, e in events
    ]


def test_deltas_of_one_message_in_a_row_go_as_one_at_the_first_offset_with_the_last_seq():
    m = uuid.uuid4()
    queued = [delta(m, 4, "Hel", 0), delta(m, 5, "lo ", 3), delta(m, 6, "you", 6)]
    assert shown(coalesced(queued)) == [("chat.s1", "message.delta", 6, ("Hello you", 0))]


def test_an_event_between_two_deltas_of_its_session_keeps_them_apart():
    m = uuid.uuid4()
    queued = [delta(m, 4, "a", 0), other("tool.called", m, 5), delta(m, 6, "b", 1)]
    assert [e["seq"] for _, e in coalesced(queued)] == [4, 5, 6]


def test_another_sessions_events_between_them_do_not():
    m, n = uuid.uuid4(), uuid.uuid4()
    queued = [delta(m, 4, "a", 0), delta(n, 1, "x", 0, "s2"), delta(m, 5, "b", 1)]
    assert shown(coalesced(queued)) == [
        ("chat.s1", "message.delta", 5, ("ab", 0)),
        ("chat.s2", "message.delta", 1, ("x", 0)),
    ]


def test_deltas_of_another_message_or_not_following_on_stay_apart():
    m, n = uuid.uuid4(), uuid.uuid4()
    queued = [delta(m, 4, "a", 0), delta(n, 5, "b", 0), delta(n, 6, "c", 5)]
    assert [e["seq"] for _, e in coalesced(queued)] == [4, 5, 6]


def test_a_joined_delta_leaves_the_events_it_was_made_of_untouched():
    m = uuid.uuid4()
    first, second = delta(m, 1, "a", 0), delta(m, 2, "b", 1)
    coalesced([first, second])
    assert (first[1]["data"], second[1]["data"]) == (
        {"text": "a", "offset": 0},
        {"text": "b", "offset": 1},
    )
