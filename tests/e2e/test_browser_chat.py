"""The chat page in a real browser: sign in, watch a turn stream, reload, see the same."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import screenshot, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice_and_assistant(db):
    """Data is written before the browser starts: Playwright runs the test body in a greenlet,
    where Django would open (and never close) a second connection."""
    make_user("alice")
    make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        tool_keys=["calculate", "current_time"],
    )


def sign_in(page, base_url: str) -> None:
    page.goto(base_url + "/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_selector("#status:text('connected')")


def test_turn_streams_token_by_token_with_tool_call_and_replays_identically(
    alice_and_assistant, asgi_server, browser_page
):
    page = browser_page
    sign_in(page, asgi_server)
    # Record every distinct length the answer text takes while it streams.
    page.evaluate("""() => {
        window.answerLengths = [];
        new MutationObserver(() => {
            const body = [...document.querySelectorAll('.msg.agent .body')].pop();
            if (body) window.answerLengths.push(body.textContent.length);
        }).observe(document.getElementById('transcript'),
                   {childList: true, subtree: true, characterData: true});
    }""")
    page.fill("#text", "what is 12*(3+4)? explain")
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.tool[data-status=done]")
    tool_summary = page.inner_text(".msg.tool summary")
    assert tool_summary.endswith("Calculated 12*(3+4) = 84")  # a sentence, not calculate({…})
    page.wait_for_selector(".msg.agent[data-status=completed]")
    lengths = sorted(set(page.evaluate("window.answerLengths")))
    assert len(lengths) >= 2, f"answer did not stream incrementally: {lengths}"
    assert "12*(3+4) = 84." in page.inner_text(".msg.agent .body")
    assert page.inner_text(".msg.agent header") == "Assistant · offline model"
    assert page.input_value("#text") == ""  # acknowledged, so the draft was cleared
    screenshot(page, "chat-after-turn")
    live = page.inner_text("#transcript")

    page.reload()
    page.wait_for_selector(".msg.agent[data-status=completed]")
    assert page.inner_text("#transcript") == live
    assert page.inner_text("#sessions li[data-session-id] a") == "What is 12*(3+4)? explain"
    assert page.inner_text("#sessions .group-label") == "Today"
    screenshot(page, "chat-after-reload")
    assert page.console_errors == []


def test_sign_in_is_required(asgi_server, browser_page):
    browser_page.goto(asgi_server + "/")
    assert "/accounts/login/" in browser_page.url


@pytest.fixture
def experts_behind_access_rules(db):
    """An entry agent that may ask three experts: one for everyone, one for the finance group
    (bob is in it, alice is not), one for holders of a permission nobody has."""
    from django.contrib.auth.models import Group

    finance = Group.objects.create(name="finance")
    make_user("alice")
    make_user("bob").groups.add(finance)
    experts = [
        make_agent("helper", display_name="Helper"),
        make_agent("ledger", display_name="Ledger", access_group=finance),
        make_agent("vault", display_name="Vault", access_permission="agents.open_vault"),
    ]
    make_agent("assistant", display_name="Assistant", is_entry=True, subagents=experts)


def test_start_page_lists_only_the_experts_this_user_may_use(
    experts_behind_access_rules, asgi_server, browser_page
):
    page = browser_page
    sign_in_as(page, asgi_server, "alice")
    assert page.inner_text(".experts-line") == "Assistant can ask: Helper."
    page.click(".account button:text('Sign out')")
    page.wait_for_url("**/accounts/login/")
    sign_in_as(page, asgi_server, "bob")
    assert page.inner_text(".experts-line") == "Assistant can ask: Helper and Ledger."
    assert page.console_errors == []
