"""A long chat in a real browser: it opens on its newest messages, and "Show earlier messages"
brings the older ones back a page at a time, in order, keeping the reader's place."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

COUNT = 30


@pytest.fixture
def long_chat(db) -> ChatSession:
    alice = make_user("alice")
    agent = make_agent("assistant", display_name="Assistant", is_entry=True)
    session = ChatSession.objects.create(id=uuid.uuid4(), user=alice, agent=agent, title="長的對話")
    for n in range(COUNT):
        role = "user" if n % 2 == 0 else "agent"
        words = f"第 {n:02d} 則訊息。" + "這是一段很長的內容，" * 40
        ChatMessage.objects.create(id=uuid.uuid4(), session=session, role=role, content=words)
    return session


SHOWN = """() => [...document.querySelectorAll('#transcript .msg')]
  .map((m) => (m.textContent.match(/第 (\\d\\d) 則/) || [])[1]).filter(Boolean)"""


def test_a_long_chat_pages_back_through_its_history(long_chat, start_asgi_server, browser_page):
    server = start_asgi_server(SNAPSHOT_MAX_BYTES="8000")
    page = browser_page
    page.set_extra_http_headers({"Accept-Language": "zh-TW,zh;q=0.9"})  # a 繁體 reader
    sign_in_as(page, server.url)
    page.click("#sessions a:text('長的對話')")
    page.wait_for_selector(".msg:has-text('第 29 則')")
    first = page.evaluate(SHOWN)
    assert first[-1] == "29" and first[0] != "00"
    assert page.inner_text("button.earlier") == "顯示較早的訊息"
    page.evaluate("document.getElementById('transcript').scrollTop = 0")  # up to the button
    screenshots(page, "history-earlier-button")
    while page.is_visible("button.earlier"):
        before = page.evaluate(SHOWN)
        page.click("button.earlier")
        page.wait_for_function(f"() => ({SHOWN})().length > {len(before)}")
    shown = page.evaluate(SHOWN)
    assert shown == [f"{n:02d}" for n in range(COUNT)]  # each once, in order
