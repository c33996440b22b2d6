"""The page against a failing server: a restart mid-answer, a message sent while offline, and
the Stop button."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import screenshot, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

LONG = "tell me a story about llamas"  # no tool rule matches: a long offline explanation

# Every text the answer showed, so a repeat or a jump back can be found afterwards.
WATCH_ANSWER = """() => {
  window.answerTexts = [];
  new MutationObserver(() => {
    const body = document.querySelector('#transcript .msg.agent .body');
    if (body) window.answerTexts.push(body.textContent);
  }).observe(document.getElementById('transcript'),
             {childList: true, subtree: true, characterData: true});
}"""


@pytest.fixture
def alice_and_assistant(db):
    """Written before the browser starts (see test_browser_chat)."""
    make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True, tool_keys=["calculate"])


def test_server_killed_mid_answer_the_page_reconnects_and_converges(
    alice_and_assistant, start_asgi_server, browser_page
):
    # Short leases and sweeps: the restarted server takes the dead server's run over quickly.
    server = start_asgi_server(
        OFFLINE_MODEL_DELAY_MS="60", RUN_LEASE_SECONDS="1", SWEEP_INTERVAL_SECONDS="0.3"
    )
    page = browser_page
    sign_in_as(page, server.url)
    page.evaluate(WATCH_ANSWER)
    page.fill("#text", LONG)
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => (document.querySelector('.msg.agent .body')?.textContent.length || 0) > 60"
    )
    server.kill()
    page.wait_for_selector("#status[data-state=reconnecting]")
    screenshot(page, "reconnecting")
    server.start()
    page.wait_for_selector("#status[data-state=connected]", timeout=15000)
    page.wait_for_selector(".msg.agent[data-status=completed]", timeout=20000)

    final = page.inner_text(".msg.agent .body")
    assert final.endswith(f"You said: “{LONG}”")
    assert page.locator(".msg.user").count() == 1
    assert page.locator(".msg.agent").count() == 1
    texts = page.evaluate("window.answerTexts")
    # Nothing twice, nothing out of order: every text shown was a beginning of the final one.
    assert all(final.startswith(t.replace("\n", "")) for t in texts if t), [
        t for t in texts if not final.startswith(t)
    ]
    live = page.inner_text("#transcript")
    # The turn is over for the page too (its run.completed can follow the message's end): a
    # message typed while one still runs is held back with a notice, not sent.
    page.wait_for_selector("#send", state="visible")

    # Offline again: a message typed now waits, then goes out once when the server is back.
    server.kill()
    page.wait_for_selector("#status[data-state=reconnecting]")
    page.fill("#text", "what is 6*7?")
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.user[data-status=sending]")
    assert page.input_value("#text") == ""
    server.start()
    page.wait_for_selector(".msg.tool[data-status=done]", timeout=15000)
    page.wait_for_function(
        "() => document.querySelectorAll('.msg.agent[data-status=completed]').length === 2"
    )
    assert page.locator(".msg.user").count() == 2
    assert page.locator(".msg.user[data-status=sending]").count() == 0
    assert "6*7 = 42." in page.locator(".msg.agent .body").nth(1).inner_text()

    page.reload()
    page.wait_for_function(
        "() => document.querySelectorAll('.msg.agent[data-status=completed]').length === 2"
    )
    assert page.inner_text("#transcript").startswith(live)
    assert page.locator(".msg.user").count() == 2


def test_stop_ends_a_streaming_answer(alice_and_assistant, start_asgi_server, browser_page):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="80")
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", LONG)
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.agent[data-status=streaming]")
    page.wait_for_function(
        "() => document.querySelector('.msg.agent .body').textContent.length > 20"
    )
    screenshot(page, "streaming-with-stop")
    page.click("#stop")
    page.wait_for_selector(".msg.agent[data-status=cancelled]")
    page.wait_for_selector("#send", state="visible")
    assert not page.is_visible("#stop")
    assert page.inner_text(".msg.agent .stopped") == "Stopped."
    page.wait_for_timeout(500)  # the page re-reads the saved transcript after a stop
    stopped = page.inner_text(".msg.agent .body")
    assert "You said" not in stopped  # it really stopped before the end
    page.wait_for_timeout(500)
    assert page.inner_text(".msg.agent .body") == stopped  # and nothing more arrives

    # The composer works again at once; Shift+Enter makes a new line, Enter sends.
    page.click("#text")
    page.keyboard.type("what is")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("6*7?")
    assert page.input_value("#text") == "what is\n6*7?"
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelectorAll('.msg.agent[data-status=completed]').length === 1"
    )
    assert page.locator(".msg.user .body").nth(1).inner_text() == "what is\n6*7?"

    page.reload()
    page.wait_for_selector(".msg.agent[data-status=cancelled]")
    assert page.inner_text(".msg.agent .body") == stopped
    assert page.console_errors == []


def test_a_turn_whose_end_was_dropped_ends_on_the_page_when_it_goes_quiet(
    alice_and_assistant, start_asgi_server, browser_page
):
    """A full channel-layer queue drops events silently (bench/scale_out.py found turns that
    never ended on the page). Here every `run.completed` is dropped on its way to the page: the
    quiet turn asks for the snapshot, which says the turn is over."""
    server = start_asgi_server(CHAT_QUIET_RESYNC_SECONDS="1")
    page = browser_page
    dropped, joins = [], []

    def lose_run_ends(ws):
        server_side = ws.connect_to_server()

        def to_page(message):
            if '"run.completed"' in str(message):
                dropped.append(message)
            else:
                ws.send(message)

        def to_server(message):
            if '"session.join"' in str(message):
                joins.append(message)
            server_side.send(message)

        server_side.on_message(to_page)
        ws.on_message(to_server)

    page.route_web_socket("**/ws/chat/", lose_run_ends)
    sign_in_as(page, server.url)
    page.fill("#text", "what is 6*7?")
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.agent[data-status=completed]:has-text('6*7 = 42.')")
    joins_at_answer = len(joins)
    page.wait_for_selector("#send", state="visible", timeout=15000)
    assert not page.is_visible("#stop")
    assert dropped, "the turn's end was sent and dropped"
    assert len(joins) > joins_at_answer  # it was the quiet ask that ended the turn on the page
    page.wait_for_timeout(2500)  # and once the turn is over, the page stops asking
    asked = len(joins)
    page.wait_for_timeout(2500)
    assert len(joins) == asked
    assert page.console_errors == []


def test_what_is_typed_before_the_scripts_run_stays_in_the_composer(
    alice_and_assistant, asgi_server, browser_page
):
    """A slow network: the page shows before its script runs, and the user types and presses
    Enter. The script's start used to put the chat's saved draft (none) over it: the words were
    lost. They stay, the early Enter's new line taken off, and nothing is sent unseen."""
    page = browser_page
    sign_in_as(page, asgi_server)
    held = []
    page.route("**/static/chat/main*.js", lambda route: held.append(route))
    page.goto(asgi_server + "/", wait_until="commit")
    page.wait_for_selector("#text")
    page.fill("#text", "what is 6*7?")
    page.keyboard.press("Enter")  # no script yet: the textarea takes a new line
    page.wait_for_function("() => document.getElementById('text').value.endsWith('\\n')")
    while not held:
        page.wait_for_timeout(50)  # the script's request arrives
    held[0].continue_()
    page.wait_for_selector("#status[data-state=connected]")
    assert page.input_value("#text") == "what is 6*7?"
    assert page.locator(".msg.user").count() == 0
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.agent[data-status=completed]:has-text('6*7 = 42.')")
    assert page.console_errors == []
