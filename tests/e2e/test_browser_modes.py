"""The routing mode of each turn (GUIDE, CHAT, STRICT) as a badge on its answer, live and
after a reload."""

from __future__ import annotations

import pytest

from agents.demo import seed_demo_agents
from agents.knowledge.demo import knowledge_seed_demo
from agents.models import Agent
from delegation.routing.seeds import routing_seed
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

BADGES = """() => [...document.querySelectorAll('#transcript > .msg.agent')].map((m) =>
  [m.querySelector('.mode-badge')?.dataset.mode || null,
   m.querySelector('.mode-badge')?.textContent || null])"""


@pytest.fixture
def routed_demo(db):
    """alice, the demo team and knowledge, and the department routing policy on the assistant."""
    make_user("alice")
    seed_demo_agents()
    knowledge_seed_demo(demo_username="alice")
    routing_seed(name="departments", entry_agents=list(Agent.objects.filter(name="assistant")))


def test_each_answer_shows_the_mode_routing_chose(routed_demo, start_asgi_server, browser_page):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="5")
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", "How many days of sick leave do I get?")  # the HR intent: CHAT
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript > .msg.agent .mode-badge")
    page.fill("#text", "Where do I start? Show me around")  # the guided-tour override: GUIDE
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelectorAll('#transcript > .msg.agent .mode-badge').length === 2"
    )
    live = page.evaluate(BADGES)
    assert live == [["CHAT", "Chat"], ["GUIDE", "Guide"]], live
    badge = page.locator("#transcript > .msg.agent .mode-badge").first
    assert "knowledge base" in badge.get_attribute("title")
    screenshots(page, "mode-badges")
    page.reload()
    page.wait_for_selector("#transcript > .msg.agent .mode-badge")
    assert page.evaluate(BADGES) == live
    assert page.console_errors == []


def test_the_user_sees_and_clears_what_routing_remembers(
    routed_demo, start_asgi_server, browser_page
):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="5")
    page = browser_page
    sign_in_as(page, server.url)
    assert not page.is_visible("#open-memory")  # a new chat remembers nothing yet
    page.fill("#text", "How many days of sick leave do I get?")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript > .msg.agent .mode-badge")
    page.click("#open-memory")
    dialog = page.locator("dialog#memory")
    page.wait_for_selector("dialog#memory .memory-part")
    text = dialog.inner_text()
    assert dialog.locator(".memory-part p").first.inner_text() == "HR expert"  # not "hr"
    assert "sick leave" in dialog.locator(".memory-chips").first.inner_text()
    assert "Leave policy" in text  # the document the answer cited
    screenshots(page, "memory-panel")
    dialog.locator("[data-forget]").click()
    page.wait_for_selector("dialog#memory :text('Nothing is remembered for this chat.')")
    assert not dialog.locator("[data-forget]").is_visible()
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") == "open-memory"  # focus came back
    page.click("#open-memory")  # read again from the server: really forgotten
    page.wait_for_selector("dialog#memory :text('Nothing is remembered for this chat.')")
    assert page.console_errors == []
