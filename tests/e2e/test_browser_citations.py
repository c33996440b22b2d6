"""Answers that cite knowledge: numbered chips under the answer, [n] markers linked to them, a
chip opens the cited passage in a dialog; the same after a reload (from the snapshot)."""

from __future__ import annotations

import pytest

from agents.demo import seed_demo_agents
from agents.knowledge.demo import knowledge_seed_demo
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How many days of sick leave do I get?"  # offline: assistant → HR expert → kb_search
ANSWER = "#transcript > .msg.agent[data-status=completed]"


@pytest.fixture
def demo_knowledge(db):
    """alice, the demo agents and the demo knowledge (written before the browser starts)."""
    make_user("alice")
    seed_demo_agents()
    knowledge_seed_demo(demo_username="alice")


def chips(page) -> list[str]:
    return page.locator(f"{ANSWER} > .citations .cite-chip").all_inner_texts()


def test_cited_answer_shows_chips_that_open_the_passage(
    demo_knowledge, start_asgi_server, browser_page
):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="5")
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", QUESTION)
    page.keyboard.press("Enter")
    page.wait_for_selector(ANSWER)
    live = chips(page)
    # The passage that answers first; then another section of the same policy (which one is
    # the ranking's call: a day count either way).
    assert live[0] == "1\nLeave policy › Sick leave" and len(live) == 2, live
    assert live[1].startswith("2\nLeave policy › "), live
    # Each [n] in the answer links to its chip.
    marker = page.locator(f"{ANSWER} .body a.cite-ref").first
    assert marker.inner_text() == "[1]"
    chip_id = page.locator(f"{ANSWER} .cite-chip").first.get_attribute("id")
    assert marker.get_attribute("href") == f"#{chip_id}"

    first = page.locator(f"{ANSWER} .cite-chip").first
    first.click()
    dialog = page.locator("dialog#passage")
    assert dialog.evaluate("d => d.open")
    assert dialog.locator("[data-title]").inner_text() == "Leave policy"
    assert dialog.locator("[data-where]").inner_text().endswith("Sick leave")
    assert dialog.locator("[data-meta]").inner_text().startswith("Effective 2026-01-01")
    assert "Up to 30 days a year" in dialog.locator("[data-quote]").inner_text()
    marks = dialog.locator("[data-quote] mark").all_inner_texts()
    assert any("30 days a year" in m for m in marks), marks  # the words the answer used
    screenshots(page, "citation-dialog")
    page.keyboard.press("Escape")
    assert not dialog.evaluate("d => d.open")
    assert page.evaluate("document.activeElement.id") == chip_id  # focus back on the chip

    marker.click()  # the marker in the text opens the same passage
    assert dialog.evaluate("d => d.open")
    assert dialog.locator("[data-title]").inner_text() == "Leave policy"
    dialog.locator("button[value=close]").click()
    assert page.evaluate("document.activeElement.classList.contains('cite-ref')")
    screenshots(page, "citation-chips")

    page.reload()
    page.wait_for_selector(ANSWER)
    assert chips(page) == live
    assert page.locator(f"{ANSWER} .body a.cite-ref").count() >= 2
    page.locator(f"{ANSWER} .cite-chip").nth(1).click()
    opening = {"Annual leave": "3 days after 6 months", "Personal leave": "Up to 14 days a year"}
    assert opening[live[1].split(" › ")[-1]] in dialog.locator("[data-quote]").inner_text()
    page.keyboard.press("Escape")
    assert page.console_errors == []
