"""The transcript follows the user in a real browser: a send always shows the new message, a
reader up in older messages is not moved by new content but gets a "Jump to latest" button;
copy and ratings say they worked, visibly and to screen readers; the language menu names each
language in its own words."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from tests.e2e.conftest import screenshots, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "What time is it?"


@pytest.fixture
def long_chat(db) -> ChatSession:
    """alice's chat of 16 long messages with the offline entry agent (written before the
    browser starts)."""
    alice = make_user("alice")
    agent = make_agent(
        "assistant", display_name="Assistant", is_entry=True, tool_keys=["current_time"]
    )
    session = ChatSession.objects.create(id=uuid.uuid4(), user=alice, agent=agent, title="Notes")
    for n in range(16):
        role = "user" if n % 2 == 0 else "agent"
        words = f"Message {n:02d}. " + "A long line of earlier discussion. " * 30
        ChatMessage.objects.create(id=uuid.uuid4(), session=session, role=role, content=words)
    return session


BELOW = """() => { const t = document.getElementById('transcript');
  return t.scrollHeight - t.scrollTop - t.clientHeight; }"""

# Whether the element's box is inside the transcript's visible part.
IN_VIEW = """(el) => { const t = document.getElementById('transcript').getBoundingClientRect();
  const r = el.getBoundingClientRect(); return r.top >= t.top - 1 && r.bottom <= t.bottom + 1; }"""


def open_chat(page, base_url: str, session: ChatSession) -> None:
    """Sign in and open the chat on its newest message."""
    sign_in_as(page, base_url)
    page.click(f"#sessions a[data-session-id='{session.id}']")
    page.wait_for_selector(".msg:has-text('Message 15.')")


def wait_for_the_new_answer(page) -> None:
    """Until the turn asked in the test has its answer (the chat had 16 messages)."""
    page.wait_for_function(NEW_ANSWER)


NEW_ANSWER = """() => document.querySelectorAll('#transcript > .msg').length > 16
  && [...document.querySelectorAll('#transcript > .msg.agent')].pop()?.dataset.status
     === 'completed'"""


def test_sending_from_older_messages_shows_the_new_one(long_chat, asgi_server, browser_page):
    page = browser_page
    open_chat(page, asgi_server, long_chat)
    page.evaluate("document.getElementById('transcript').scrollTop = 0")
    assert page.evaluate(BELOW) > 2000  # reading the first messages

    page.fill("#text", QUESTION)
    page.press("#text", "Enter")
    mine = page.locator(f"#transcript > .msg.user:has-text('{QUESTION}')")
    mine.wait_for()
    assert mine.evaluate(IN_VIEW)  # shown at once, the reader taken down to it
    answer = page.locator("#transcript > .msg.agent[data-status=completed]").last
    wait_for_the_new_answer(page)
    assert answer.evaluate(IN_VIEW) or page.evaluate(BELOW) < 80  # the answer followed too
    assert page.is_hidden("#jump")
    assert page.console_errors == []


def test_new_content_below_the_view_brings_a_jump_button(long_chat, asgi_server, browser_page):
    page = browser_page
    open_chat(page, asgi_server, long_chat)
    assert page.is_hidden("#jump")  # at the bottom: nothing to jump to
    page.evaluate("document.getElementById('transcript').scrollTop = 0")
    page.wait_for_timeout(100)  # a frame: scrolling up alone brings no button
    assert page.is_hidden("#jump")

    # The same chat in a second tab asks something: the first tab gets the turn live.
    other = page.context.new_page()
    other.goto(f"{asgi_server}/#{long_chat.id}")
    other.wait_for_selector(".msg:has-text('Message 15.')")
    other.fill("#text", QUESTION)
    other.press("#text", "Enter")

    jump = page.locator("#jump")
    jump.wait_for(state="visible")
    wait_for_the_new_answer(page)
    assert page.evaluate("document.getElementById('transcript').scrollTop") == 0  # not yanked
    # Only the transcript scrolls: the page itself (header, composer) stays put.
    assert page.evaluate("document.scrollingElement.scrollHeight") == page.viewport_size["height"]
    assert jump.is_visible()
    assert jump.inner_text() == "Jump to latest"
    assert jump.evaluate("b => b.tagName") == "BUTTON"
    page.mouse.move(5, 5)
    screenshots(page, "follow-jump-en")

    # By keyboard: the button takes the reader to the newest message and goes away.
    jump.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => ({BELOW})() < 80")
    jump.wait_for(state="hidden")
    assert page.evaluate("document.activeElement.id") == "text"  # focus lands in the composer
    last = page.locator(f"#transcript > .msg.user:has-text('{QUESTION}')")
    assert page.evaluate(BELOW) < 80 and last.count() == 1
    assert page.console_errors == []


def test_copy_and_ratings_say_so_in_chinese_and_languages_name_themselves(
    long_chat, asgi_server, browser_page
):
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.set_extra_http_headers({"Accept-Language": "zh-TW,zh;q=0.9"})
    open_chat(page, asgi_server, long_chat)
    assert page.get_attribute("html", "lang") == "zh-hant"
    # Each language in its own name, whatever the page's language.
    assert page.locator("#language option").all_inner_texts() == ["English", "繁體中文", "简体中文"]
    assert page.get_attribute(".account a[href='/tasks/']", "href") == "/tasks/"

    # Badges, citation numbers and [n] markers are big enough for Chinese characters.
    assert page.evaluate(SMALL_PRINT) == {k: True for k in ("badge", "mode", "chip", "ref")}

    page.fill("#text", "現在幾點？")
    page.press("#text", "Enter")
    answer = page.locator("#transcript > .msg.agent[data-status=completed]").last
    wait_for_the_new_answer(page)
    answer.hover()
    answer.locator("button[data-action=copy]").click()
    copied = answer.locator("button[data-action=copy][data-done='1']")
    copied.wait_for()
    # Said in words on the button (its label shown as text), and to screen readers.
    assert copied.get_attribute("aria-label") == "已複製"
    assert copied.evaluate("b => b.getBoundingClientRect().width") > 40  # room for the words
    page.wait_for_function("() => document.getElementById('announcer').textContent === '已複製'")
    assert page.evaluate("navigator.clipboard.readText()").strip()
    screenshots(page, "follow-copied-zh-hant")

    answer.locator("button[data-action=up]").click()
    ack = answer.locator(".msg-foot .ack")
    ack.wait_for()
    assert ack.inner_text() == "謝謝你的回饋。"
    page.wait_for_function(
        "() => document.getElementById('announcer').textContent === '謝謝你的回饋。'"
    )
    assert page.console_errors == []


# Whether each small label renders at 13 px or more (a sample of each kind in a message).
SMALL_PRINT = """() => {
  const msg = document.querySelector('#transcript > .msg.agent');
  const sample = document.createElement('div');
  sample.innerHTML = '<span class="mode-badge">引導</span>'
    + '<div class="body"><a class="cite-ref">1</a></div>'
    + '<ul class="citations"><li><button class="cite-chip"><span class="num">1</span>'
    + '<span class="title">請假規定</span></button></li></ul>';
  msg.append(sample);
  const size = (selector) =>
    parseFloat(getComputedStyle(document.querySelector(selector)).fontSize);
  const sizes = {badge: size('.chat-head .badge'), mode: size('.mode-badge'),
                 chip: size('.cite-chip .num'), ref: size('.body .cite-ref')};
  sample.remove();
  return Object.fromEntries(Object.entries(sizes).map(([k, v]) => [k, v >= 13]));
}"""


# English words the page itself says (text, labels, tooltips, placeholders), outside what people
# wrote (messages, chat titles, the user's and the agent's names).
ENGLISH = """() => {
  const people = '#transcript .msg .body, #transcript .msg.tool, #sessions a, .account .who, h1';
  const words = new Set();
  const add = (text) => (text || '').match(/[A-Za-z]{3,}/g)?.forEach((w) => words.add(w));
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest(people) || el.closest('script, style, noscript')) continue;
    for (const node of el.childNodes) if (node.nodeType === 3) add(node.textContent);
    for (const attr of ['aria-label', 'title', 'placeholder']) add(el.getAttribute(attr));
  }
  return [...words].sort();
}"""

# Names that stay as they are: an environment variable, the agent's name, keys on the keyboard,
# the language menu's "English" (each language in its own name).
NAMES = {"OPENAI", "API", "KEY", "Assistant", "Enter", "Shift", "English"}


@pytest.mark.parametrize(
    ("accept", "lang"), [("zh-TW,zh;q=0.9", "zh-hant"), ("zh-CN,zh;q=0.9", "zh-hans")]
)
def test_the_chinese_page_says_nothing_in_english(
    long_chat, asgi_server, browser_page, accept, lang
):
    page = browser_page
    page.set_extra_http_headers({"Accept-Language": accept})
    open_chat(page, asgi_server, long_chat)
    assert page.get_attribute("html", "lang") == lang
    page.fill("#text", "現在幾點？")
    page.press("#text", "Enter")
    wait_for_the_new_answer(page)
    page.evaluate("document.getElementById('transcript').scrollTop = 0")
    assert set(page.evaluate(ENGLISH)) - NAMES == set()
    assert page.console_errors == []
