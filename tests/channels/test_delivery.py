"""An answer's way back to LINE: pieces within LINE's limits at paragraph boundaries, plain
text with numbered sources, a push once its reply token is stale, once across retries (LINE's
retry key), and LINE's 429 waited out."""

from __future__ import annotations

import time
import uuid

import pytest
from django.utils import timezone

from chat.channels.delivery import delivery_send
from chat.channels.models import Delivery, InboundEvent
from chat.channels.text import pieces, plain_text, sources_text
from chat.models import ChatMessage, ChatSession
from delegation.models import Run
from tests.factories import make_agent, make_user


def test_pieces_cut_between_paragraphs_then_lines_and_keep_every_character():
    paragraphs = ["第一段" * 300, "第二段" * 300, "x" * 2500]
    text = "\n\n".join(paragraphs)
    cut = pieces(text, 1000)
    assert all(len(piece) <= 1000 for piece in cut)
    assert cut[:2] == ["第一段" * 300, "第二段" * 300]  # whole paragraphs, not 1000 + 800
    assert [len(piece) for piece in cut[2:]] == [1000, 1000, 500]  # a paragraph too long: cut
    assert "".join(cut).replace("\n", "") == text.replace("\n", "")
    assert pieces("short", 5000) == ["short"]


def test_plain_text_drops_markdown_marks_and_keeps_links_readable():
    text = "## 年假\n\n**十四天**，見 [員工手冊](https://hr.example.com/h)。\n- 一\n- `二`"
    assert (
        plain_text(text) == "年假\n\n十四天，見 員工手冊 (https://hr.example.com/h)。\n・一\n・二"
    )


def test_sources_are_numbered_lines():
    sources = sources_text([{"ref": 1, "title": "員工手冊"}, {"ref": 2, "title": "Travel policy"}])
    assert sources.splitlines()[1:] == ["[1] 員工手冊", "[2] Travel policy"]


@pytest.fixture
def answered(db, line):
    """A finished turn from LINE whose reply token is stale, with a long cited answer."""
    user = make_user("alice")
    agent = make_agent("assistant", is_entry=True)
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user)
    run = Run.objects.create(
        session=session,
        user=user,
        agent=agent,
        agent_version=agent.version,
        agent_config={},
        status="succeeded",
        language="zh-hant",
        deadline=timezone.now(),
    )
    answer = "\n\n".join(f"第{i}段：" + "年假規定" * 400 for i in range(4))
    ChatMessage.objects.create(
        id=uuid.uuid4(),
        session=session,
        run=run,
        role="agent",
        content=answer,
        citations=[{"ref": 1, "title": "員工手冊"}],
    )
    event = InboundEvent.objects.create(
        channel="line",
        event_id="E1",
        external_id="U1",
        kind="text",
        text="年假？",
        reply={"token": "t1", "to": "U1", "at_ms": (time.time() - 120) * 1000},
    )
    return Delivery.objects.create(event=event, run_id=run.id)


def test_a_late_answer_is_pushed_in_pieces_within_limits_once(answered, line):
    delivery_send(run_id=answered.run_id)
    delivery_send(run_id=answered.run_id)  # a second call finds it sent
    assert not line.replies
    texts = line.texts()
    assert len(texts) == 2 and all(len(t) <= 5000 for t in texts)
    assert texts[-1].endswith("來源：\n[1] 員工手冊")
    assert Delivery.objects.get().status == "sent"


def test_a_retry_after_a_send_whose_end_was_not_recorded_shows_nothing_twice(answered, line):
    delivery_send(run_id=answered.run_id)
    Delivery.objects.update(status="pending")  # as if the worker died before recording it
    delivery_send(run_id=answered.run_id)
    assert len(line.pushes) == 1  # LINE took the retry key once
    assert Delivery.objects.get().attempts == 2 and Delivery.objects.get().status == "sent"


def test_rate_limits_are_waited_out(answered, line, monkeypatch):
    monkeypatch.setattr("chat.channels.delivery.RATE_LIMIT_WAITS", (0.01, 0.01, 0.01, 0.01))
    line.rate_limited = 2
    delivery_send(run_id=answered.run_id)
    assert len(line.pushes) == 1 and Delivery.objects.get().status == "sent"
