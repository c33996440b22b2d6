"""Message actions in a real browser: try again after a model outage and after a stop, edit and
resend (the old branch folds away), copy, thumbs with a note, time and tokens on hover, code
highlighting and math, the start screen's suggestions, "Thinking…", readable planner chips."""

from __future__ import annotations

import pytest

from agents.demo import seed_demo_agents
from agents.knowledge.demo import knowledge_seed_demo
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI, error, text

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "#transcript > .msg.agent"
RICH = (
    "Here is the code:\n\n```python\ndef area(r):\n    return 3.14159 * r ** 2\n```\n\n",
    "Einstein wrote $E = mc^2$; a price of $5 and $10 is not math.\n\n",
    "$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$",
)


@pytest.fixture
def outage_then_answers(db):
    """alice and an entry agent on the fake OpenAI server: the first call fails (503), then a
    rich answer, then the answer to an edited question."""
    make_user("alice")
    fake = FakeOpenAI().start()
    make_agent("assistant", display_name="Assistant", is_entry=True, provider="openai", model="m")
    fake.script(error(503, "upstream is down"), text(*RICH), text("6*8 = 48."))
    yield fake
    fake.stop()


def test_outage_try_again_rate_copy_edit_and_history(
    outage_then_answers, start_asgi_server, browser_page
):
    server = start_asgi_server(
        OPENAI_BASE_URL=outage_then_answers.base_url, OPENAI_API_KEY="k", OPENAI_MAX_RETRIES="0"
    )
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in_as(page, server.url)
    page.fill("#text", "what is 6*7?")
    page.keyboard.press("Enter")

    # The outage is said once, in the transcript, with "Try again" (no second notice above).
    failed = page.locator(f"{ANSWER}[data-status=failed]")
    failed.wait_for()
    assert "model service is unavailable" in failed.locator(".body").inner_text()
    assert page.is_hidden("#notice")
    assert page.locator(".msg[data-status=failed]").count() == 1
    retry = failed.locator("button[data-action=retry]")
    assert retry.get_attribute("aria-label") == "Try again"
    screenshots(page, "actions-outage-try-again")
    retry.click()

    answer = page.locator(f"{ANSWER}[data-status=completed]")
    answer.wait_for()
    # The failed attempt folds away as an earlier answer; the new one takes its place.
    fold = page.locator("#transcript > .msg.branch")
    assert fold.locator("summary").inner_text() == "Earlier answer"
    assert not fold.evaluate("d => d.open")
    assert fold.locator(".msg.agent[data-status=failed]").count() == 1
    # Code is highlighted; $…$ and $$…$$ are typeset; prices stay text.
    assert answer.locator("code[data-lang=python] .hljs-keyword").first.inner_text() == "def"
    page.wait_for_selector(f"{ANSWER} .math.typeset .katex")
    assert answer.locator(".math.typeset").count() == 2
    assert answer.locator(".math-display.typeset").count() == 1
    assert "$5 and $10" in answer.locator(".body").inner_text()

    # Time and tokens on hover.
    assert not page.evaluate("matchMedia('(hover: none)').matches")
    page.mouse.move(5, 5)
    assert answer.locator(".msg-foot .when").is_hidden()
    answer.hover()
    assert answer.locator(".msg-foot .when").is_visible()
    assert answer.locator(".msg-foot .usage").inner_text() == "18 tokens"
    assert answer.locator(".msg-foot time").get_attribute("datetime")

    # Copy puts the answer's Markdown on the clipboard.
    answer.locator("button[data-action=copy]").click()
    page.wait_for_selector(f"{ANSWER} button[data-action=copy][aria-label=Copied]")
    assert page.evaluate("navigator.clipboard.readText()").startswith("Here is the code:")
    # Thumbs down, with a note; stored, so a reload shows it.
    answer.locator("button[data-action=down]").click()
    page.wait_for_selector(f"{ANSWER} button[data-action=down][aria-pressed=true]")
    answer.locator(".feedback-note textarea").fill("The area uses a rounded pi.")
    screenshots(page, "actions-feedback-note")
    with page.expect_response(lambda r: r.request.method == "PUT") as saved:
        answer.locator(".feedback-note button[type=submit]").click()
    assert saved.value.json()["note"] == "The area uses a rounded pi."
    assert answer.locator(".feedback-note").count() == 0

    # Edit the question and send it again: the old branch folds, the new one answers.
    question = page.locator("#transcript > .msg.user")
    question.hover()
    question.locator("button[data-action=edit]").click()
    editor = question.locator(".edit-form textarea")
    assert editor.input_value() == "what is 6*7?"
    editor.fill("what is 6*8?")
    screenshots(page, "actions-edit")
    editor.press("Enter")
    page.wait_for_selector(f"{ANSWER}[data-status=completed]:has-text('6*8 = 48.')")
    page.wait_for_function(
        "() => document.querySelector('#transcript > .msg.branch summary')?.textContent"
        " === 'Earlier version, before your edit'"
    )
    edited = page.locator("#transcript > .msg.user")
    assert edited.locator(".body").inner_text() == "what is 6*8?"
    assert edited.locator(".edited-label").inner_text() == "edited"
    old = page.locator("#transcript > .msg.branch")
    assert old.count() == 1  # one fold: the first question with both of its answers
    old.locator("summary").click()
    assert old.locator(".msg.user .body").inner_text() == "what is 6*7?"
    assert old.locator(".msg.agent").count() == 2
    assert old.locator("button[data-action=edit]").count() == 0  # history is read-only
    screenshots(page, "actions-branches")

    live = page.evaluate(SHAPE)
    page.reload()
    page.wait_for_selector(f"{ANSWER}[data-status=completed]")
    # KaTeX loads again after a reload, on the first formula (here inside the fold): wait for it.
    page.wait_for_function("() => !document.querySelector('span.math:not(.typeset)')")
    assert page.evaluate(SHAPE) == live
    # Tokens too: saved with the message, not only seen live.
    reloaded = page.locator(f"{ANSWER}[data-status=completed]")
    reloaded.hover()
    assert reloaded.locator(".msg-foot .usage").inner_text() == "18 tokens"
    # The rating survived the reload (read back from the server).
    page.locator("#transcript > .msg.branch summary").click()
    rated = page.locator("#transcript > .msg.branch .msg.agent[data-status=completed]")
    rated.locator("button[data-action=down][aria-pressed=true]").wait_for()
    assert page.console_errors == []


# The transcript's shape: what each top-level entry is and says (times and tokens left out).
SHAPE = """() => [...document.querySelectorAll('#transcript > *')].map((m) => {
  if (m.classList.contains('branch')) {
    return ['branch', m.querySelector('summary').textContent,
            [...m.querySelectorAll('.msg .body')].map((b) => b.textContent)];
  }
  return [m.className, m.dataset.status, m.querySelector('.body')?.textContent ?? m.textContent];
})"""


@pytest.fixture
def demo_team(db):
    """alice with the demo team and knowledge (written before the browser starts)."""
    make_user("alice")
    seed_demo_agents()
    knowledge_seed_demo(demo_username="alice")


def test_suggestions_send_thinking_shows_and_planner_chips_read_well(
    demo_team, start_asgi_server, errand_page
):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="60")
    page = errand_page
    sign_in_as(page, server.url)
    chips = page.locator("#empty .chip").all_inner_texts()
    assert chips == [
        "Add a task: pick up Mum at the airport on Saturday morning",
        "Will it rain in Taipei tomorrow?",
        "Leave rules: how many days of sick leave do I get?",
        "Budget check: what is 1200*0.05?",
    ]
    screenshots(page, "start-screen")
    page.evaluate(WATCH_THINKING)
    page.click("#empty .chip >> nth=0")  # a suggestion is sent at once
    page.wait_for_selector(f"{ANSWER}[data-status=completed]")
    assert page.evaluate("window.sawThinking")  # between the send and the first event
    assert page.locator(".msg.thinking").count() == 0
    assert page.locator("#transcript > .msg.user .body").inner_text().startswith("Add a task")
    # The planner's tool chip reads as a sentence (its `message`); the JSON is one click away.
    panel = page.locator(".msg.delegation").first
    panel.locator("summary").first.click()
    chip = panel.locator(".msg.tool").first
    result = chip.locator("summary").inner_text()
    assert "Created “pick up Mum at the airport” on Saturday" in result, result
    assert chip.locator(".tool-args").count() == 0  # the sentence, not the arguments
    chip.locator("summary").click()
    assert '"message"' in chip.locator(".tool-detail pre").last.inner_text()
    screenshots(page, "planner-chip")
    assert page.console_errors == []


WATCH_THINKING = """() => {
  window.sawThinking = false;
  new MutationObserver(() => {
    if (document.querySelector('#transcript .msg.thinking')) window.sawThinking = true;
  }).observe(document.getElementById('transcript'), {childList: true, subtree: true});
}"""


@pytest.fixture
def assistant_alone(db):
    """alice and an offline entry agent with no experts."""
    make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True, tool_keys=["calculate"])


def test_try_again_after_a_stop_and_the_still_coming_notice(
    assistant_alone, start_asgi_server, browser_page
):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="80")
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", "tell me a story about llamas")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('.msg.agent .body')?.textContent.length > 20"
    )
    # Sending while the answer streams: a plain notice (not an error) that goes by itself.
    page.fill("#text", "what is 2+2?")
    page.keyboard.press("Enter")
    notice = page.locator("#notice")
    assert notice.get_attribute("data-kind") == "info" and notice.get_attribute("role") == "status"
    assert "still coming" in notice.inner_text()
    assert page.input_value("#text") == "what is 2+2?"  # the draft is kept
    page.click("#stop")
    page.wait_for_selector(f"{ANSWER}[data-status=cancelled]")
    page.wait_for_selector("#notice", state="hidden")  # the turn ended: the notice went away
    stopped = page.locator(f"{ANSWER}[data-status=cancelled]")
    stopped.locator("button[data-action=retry]").click()
    page.wait_for_selector(f"{ANSWER}[data-status=streaming]")
    page.wait_for_selector(f"{ANSWER}[data-status=completed]", timeout=20000)
    assert "You said" in page.inner_text(f"{ANSWER} .body")
    fold = page.locator("#transcript > .msg.branch")
    assert fold.locator(".msg.agent[data-status=cancelled]").count() == 1
    page.press("#text", "Enter")  # the kept draft goes now
    page.wait_for_selector(f"{ANSWER}[data-status=completed]:has-text('2+2 = 4.')")
    screenshots(page, "actions-retry-after-stop")
    assert page.console_errors == []
