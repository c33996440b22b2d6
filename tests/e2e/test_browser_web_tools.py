"""Web tools on the chat page: an open_url offer is a link the user opens (nothing opens by
itself, its words stay text), and a cited web page has a link beside its chip."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from chat.models import ChatMessage, ChatSession
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI, text, tool_call

pytestmark = pytest.mark.django_db(transaction=True)

ENTRY = {"kind": "entry", "name": "assistant", "display_name": "Assistant", "depth": 0}
OFFER = "#transcript .msg.tool a.open-url"
LINK = "a => [a.getAttribute('href'), a.target, a.rel, a.textContent, a.children.length]"


def web_citation(ref: int, url: str, title: str) -> dict:
    """A citation of a fetched web page, as delegation/steps/citations.py keeps it."""
    return {
        "ref": ref,
        "kind": "web",
        "url": url,
        "title": title,
        "document_id": None,
        "chunk_id": None,
        "version": None,
        "heading_path": [],
        "effective_date": None,
        "quote": "Cats sleep between twelve and sixteen hours a day.",
    }


@pytest.fixture
def fake_model(db) -> Iterator[FakeOpenAI]:
    """alice, an entry agent that may offer links, and a stored chat citing two web pages (one
    with a URL no page may link to) beside a stored offer of a javascript: link."""
    alice = make_user("alice")
    agent = make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        provider="openai",
        model="fake",
        tool_keys=["open_url"],
    )
    session = ChatSession.objects.create(id=uuid.uuid4(), user=alice, agent=agent, title="Cats")
    ChatMessage.objects.create(id=uuid.uuid4(), session=session, role="user", content="cats?")
    ChatMessage.objects.create(
        id=uuid.uuid4(),
        session=session,
        role="agent",
        status="completed",
        agent={**ENTRY, "path": ["assistant"]},
        content="Cats sleep sixteen hours [1]. Not this one [2].",
        citations=[
            web_citation(1, "https://example.com/cats", "Cats at rest"),
            web_citation(2, "javascript:alert(1)", "Hostile"),
        ],
    )
    ChatMessage.objects.create(
        id=uuid.uuid4(),
        session=session,
        role="tool",
        status="completed",
        agent={**ENTRY, "path": ["assistant"]},
        tool={
            "call_id": "call_9",
            "name": "open_url",
            "arguments": {},
            "ok": True,
            "result": {"open_url": {"url": "javascript:alert(1)", "label": "Hostile"}},
        },
    )
    server = FakeOpenAI().start()
    server.script(
        tool_call(
            "open_url",
            {"url": "https://example.org/report?a=1&b=2", "label": "<b>Open</b> the report"},
        ),
        text("Here is the link."),
    )
    yield server
    server.stop()


def test_an_offered_link_and_a_cited_page_are_links_the_user_opens(
    fake_model, start_asgi_server, browser_page
):
    server = start_asgi_server(
        OPENAI_BASE_URL=fake_model.base_url, OPENAI_API_KEY="test-key", OPENAI_MAX_RETRIES="0"
    )
    page = browser_page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in_as(page, server.url)
    page.fill("#text", "give me the report link")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript .msg.agent[data-status=completed]")

    offered = [
        "https://example.org/report?a=1&b=2",
        "_blank",
        "noopener noreferrer",
        "<b>Open</b> the report",  # the model's words as text, not markup
        0,
    ]
    assert page.locator(OFFER).evaluate(LINK) == offered
    assert len(page.context.pages) == 1  # nothing opened by itself
    screenshots(page, "web-tools-open-url")
    page.reload()
    page.wait_for_selector(OFFER)
    assert page.locator(OFFER).evaluate(LINK) == offered  # the same from the snapshot

    page.click("#sessions a:text('Cats')")
    page.wait_for_selector(".msg.agent .citations")
    links = page.locator(".msg.agent .citations a.cite-link")
    assert links.count() == 1  # the javascript: citation gets no link
    assert links.evaluate(LINK) == [
        "https://example.com/cats",
        "_blank",
        "noopener noreferrer",
        "example.com",
        0,
    ]
    assert page.locator(OFFER).count() == 0  # nor the stored javascript: offer
    screenshots(page, "web-tools-citations")
    assert dialogs == [] and page.console_errors == []
