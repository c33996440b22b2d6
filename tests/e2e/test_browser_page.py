"""The page around the messages: chats grouped by date, drafts per chat, scheduled prompts
labelled, toasts that go by themselves clear of the composer, and accessibility (the log
role, "You", every expert announced, focus back after dialogs, "/" to the composer, readable
placeholders in the dark theme)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from chat.models import ChatMessage, ChatSession
from tests.e2e.conftest import screenshots, sign_in_as
from tests.e2e.test_browser_events import reminder
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

TODAY, WEEK, OLD = (uuid.UUID(int=n) for n in (1, 2, 3))


@pytest.fixture
def dated_chats(db):
    """alice's chats from today, three days ago and last month; one holds a scheduled prompt."""
    alice = make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True)
    now = timezone.now()
    for sid, title, age in ((TODAY, "Plans", 0), (WEEK, "Weekly report", 3), (OLD, "Taxes", 40)):
        session = ChatSession.objects.create(id=sid, user=alice, title=title)
        ChatMessage.objects.create(
            id=uuid.uuid4(),
            session=session,
            role="user",
            content=f"about {title.lower()}",
            origin="scheduled" if sid == WEEK else "",
        )
        ChatSession.objects.filter(pk=sid).update(updated_at=now - timedelta(days=age))


def groups(page) -> list[list[str]]:
    """The sidebar as [heading, titles…] per date group."""
    return page.evaluate(
        """() => {
          const out = [];
          for (const li of document.querySelectorAll('#sessions > li')) {
            if (li.classList.contains('group-label')) out.push([li.textContent]);
            else out[out.length - 1].push(li.querySelector('a').firstChild.textContent);
          }
          return out;
        }"""
    )


def contrast(page, selector: str) -> float:
    """The contrast ratio of an element's placeholder against its composer's background."""
    return page.evaluate(
        """(selector) => {
          const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
          const lum = ([r, g, b]) => [r, g, b].map((v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
          }).reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
          const box = document.querySelector(selector);
          const fg = lum(rgb(getComputedStyle(box, '::placeholder').color));
          let el = box, bg = 'rgba(0, 0, 0, 0)';
          while (el && /rgba\\(0, 0, 0, 0\\)|transparent/.test(bg)) {
            bg = getComputedStyle(el).backgroundColor;
            el = el.parentElement;
          }
          const back = lum(rgb(bg));
          return (Math.max(fg, back) + 0.05) / (Math.min(fg, back) + 0.05);
        }""",
        selector,
    )


def test_dates_drafts_scheduled_prompts_and_keyboard(dated_chats, asgi_server, browser_page):
    page = browser_page
    sign_in_as(page, asgi_server)
    assert groups(page) == [
        ["Today", "Plans"],
        ["Previous 7 days", "Weekly report"],
        ["Older", "Taxes"],
    ]
    transcript = page.locator("#transcript")
    assert transcript.get_attribute("role") == "log"

    # A scheduled prompt is labelled, not shown as if the user had typed it.
    page.click("#sessions a:text('Weekly report')")
    scheduled = page.locator(".msg.user.scheduled")
    scheduled.wait_for()
    assert scheduled.locator("header").inner_text() == "Scheduled prompt"
    assert scheduled.locator("header").is_visible()
    assert scheduled.locator("button[data-action=edit]").count() == 0
    screenshots(page, "scheduled-prompt")

    # Drafts belong to their chat.
    page.fill("#text", "draft for the report")
    page.click("#sessions a:text('Plans')")
    page.wait_for_selector(".msg.user:has-text('about plans')")
    assert page.input_value("#text") == ""
    # Your own messages are read out as "You" (the header is for screen readers only).
    you = page.locator(".msg.user:not(.scheduled) header")
    assert you.inner_text() == "You" and you.evaluate("h => h.offsetWidth") <= 1
    page.fill("#text", "draft for plans")
    page.click("#sessions a:text('Weekly report')")
    page.wait_for_selector(".msg.user.scheduled")
    assert page.input_value("#text") == "draft for the report"
    page.reload()
    page.wait_for_selector(".msg.user.scheduled")
    assert page.input_value("#text") == "draft for the report"

    # "/" from anywhere outside a field goes to the composer; Shift+Escape too.
    page.click("#transcript")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "text"
    assert page.input_value("#text") == "draft for the report"  # no stray "/"
    page.click("#session-search")
    page.keyboard.press("Shift+Escape")
    assert page.evaluate("document.activeElement.id") == "text"

    # Focus comes back to the delete button when the confirmation is cancelled.
    item = page.locator("#sessions li", has_text="Taxes")
    item.hover()
    item.locator("button.delete").click()
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.closest('li')?.textContent") == "Taxes"
    assert page.evaluate("document.activeElement.classList.contains('delete')")

    # Placeholders are readable in both themes (WCAG AA: 4.5:1).
    assert contrast(page, "#text") >= 4.5
    page.emulate_media(color_scheme="dark")
    assert contrast(page, "#text") >= 4.5
    assert contrast(page, "#session-search") >= 4.5
    screenshots(page, "dated-chats")
    assert page.console_errors == []


def delegation_started(run_id: str, expert: str, n: int) -> str:
    """An injected delegation.started of the entry agent's run in the Plans chat."""
    tag = {"kind": "entry", "name": "assistant", "display_name": "Assistant", "depth": 0}
    return json.dumps(
        {
            "type": "delegation.started",
            "session_id": str(TODAY),
            "run_id": run_id,
            "message_id": str(uuid.uuid4()),
            "agent": {**tag, "path": ["assistant"]},
            "seq": n,
            "data": {
                "call_id": f"c{n}",
                "run_id": str(uuid.uuid4()),
                "target": expert.lower(),
                "display_name": expert,
                "task": "help",
                "status": "running",
            },
        }
    )


def test_toasts_go_by_themselves_clear_of_the_composer_and_every_expert_is_announced(
    dated_chats, asgi_server, browser_page
):
    page = browser_page
    sockets = []
    page.route_web_socket("**/ws/chat/", lambda ws: (ws.connect_to_server(), sockets.append(ws)))
    sign_in_as(page, asgi_server)
    page.click("#sessions a:text('Plans')")
    page.wait_for_selector(".msg.user:has-text('about plans')")
    ws = sockets[-1]
    page.evaluate(
        """() => {
          window.said = [];
          new MutationObserver(() => window.said.push(announcer.textContent))
            .observe(document.getElementById('announcer'), {childList: true, subtree: true});
        }"""
    )
    run = str(uuid.uuid4())
    ws.send(delegation_started(run, "Finance expert", 1))
    ws.send(delegation_started(run, "HR expert", 2))  # asked in the same moment
    page.wait_for_function("() => window.said.some((t) => t.includes('HR expert'))")
    said = " ".join(page.evaluate("window.said"))
    assert "Asking Finance expert" in said and "Asking HR expert" in said

    page.set_viewport_size({"width": 390, "height": 844})
    for n in range(5):
        ws.send(reminder(TODAY, 100 + n, f"Reminder number {n}"))
    page.wait_for_selector(".toast:has-text('Reminder number 4')")
    assert page.locator(".toast").count() == 3  # the newest three
    toasts = page.locator("#toasts").bounding_box()
    composer = page.locator("#composer").bounding_box()
    assert toasts["y"] + toasts["height"] <= composer["y"]  # never over the composer
    screenshots(page, "toasts")
    # They go by themselves (no click needed; a pointer resting on one holds it).
    page.mouse.move(195, 600)
    page.wait_for_selector(".toast", state="detached", timeout=20000)
    assert page.console_errors == []
