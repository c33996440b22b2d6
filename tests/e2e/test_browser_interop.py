"""Another platform's agent in the page, as the demo shows it offline: the remote translator
(A2A) says how its work goes on its panel, asks the user for the text through A2A's
input-required, and converts the answer on the same remote task; a reload shows the same."""

from __future__ import annotations

import pytest

from agents.demo import TRANSLATOR_PATH, seed_demo_agents
from agents.models import Agent
from chat.interop.demo_translator import QUESTION, WORKING
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

CARD = ".human-waits .human-card"
PANEL = ".msg.delegation[data-depth='1']"
# Every text the expert panels' status line showed, as the page changed.
WATCH_NOTES = """() => {
  window.notes = [];
  new MutationObserver(() => {
    for (const note of document.querySelectorAll('.msg.delegation .note')) {
      if (!note.hidden && note.textContent && !window.notes.includes(note.textContent)) {
        window.notes.push(note.textContent);
      }
    }
  }).observe(document.getElementById('transcript'),
             {childList: true, subtree: true, characterData: true, attributes: true});
}"""
SHOWN = """() => [...document.querySelectorAll(
  '#transcript .msg.user .body, #transcript .msg.agent .body, #transcript .human-state'
)].map((e) => e.textContent)"""


@pytest.fixture
def demo_with_its_translator(start_asgi_server):
    """The demo's agents, the translator reached at this test's server (written before the
    browser starts: Playwright runs the test body in a greenlet)."""
    server = start_asgi_server(DEMO_TRANSLATOR="true")
    seed_demo_agents()
    Agent.objects.filter(name="translator").update(base_url=server.url + TRANSLATOR_PATH)
    make_user("alice")
    return server.url


def test_the_remote_translator_asks_for_the_text_and_converts_the_answer(
    demo_with_its_translator, browser_page
):
    page = browser_page
    sign_in_as(page, demo_with_its_translator)
    page.evaluate(WATCH_NOTES)
    page.fill("#text", "請幫我翻譯")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{CARD} .human-question")
    assert page.inner_text(f"{CARD} .human-question") == QUESTION
    assert page.inner_text(f"{PANEL} .who") == "翻譯員"  # (the name in the asker's script)
    assert page.evaluate("window.notes") == [WORKING]  # its status while it worked
    assert page.is_hidden(f"{PANEL} .note")  # and no longer while it asks
    screenshots(page, "interop-remote-asks")

    page.fill(f"{CARD} input", "會議在下週一，請準備發票")
    page.click(f"{CARD} .human-send")
    page.wait_for_selector(".msg.agent[data-depth='0'][data-status=completed]")
    expert = page.text_content(f"{PANEL} .msg.agent .body").strip()  # (its panel closed)
    assert expert == "[offline translator] 会议在下周一，请准备发票"
    assert "[offline translator] 会议在下周一" in page.inner_text(".msg.agent[data-depth='0']")
    page.click(f"{PANEL} summary")  # open it to look
    screenshots(page, "interop-remote-answered")
    live = page.evaluate(SHOWN)

    page.reload()
    page.wait_for_selector(".msg.agent[data-depth='0'][data-status=completed]")
    assert page.evaluate(SHOWN) == live
    assert page.console_errors == []
