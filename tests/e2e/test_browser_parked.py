"""Waiting for staff does not lock the chat, in a real browser: while a turn waits for an
approval the user sends another message, which is answered at once; the approval then
arrives on the staff inbox page (in Traditional Chinese: no slugs, no raw JSON) and the parked
turn's answer shows too. Screenshots of the waiting card and of the inbox go to /tmp/shots/h4."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from tests.e2e.conftest import sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots/h4")
CARD = ".human-waits .human-card.wait"
ANSWERS = ".msg.agent[data-depth='0'][data-status=completed] .body"


def shoot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def gated(db):
    """alice, staff stella (Planners), and an entry agent whose create_task needs approval."""
    make_user("alice")
    stella = make_user("stella", is_staff=True)
    stella.groups.add(Group.objects.create(name="Planners"))
    make_agent(
        "assistant",
        display_name="Assistant",
        is_entry=True,
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )


def test_chat_while_a_turn_waits_for_approval_then_both_answers_show(
    gated, asgi_server, browser_page
):
    page = browser_page
    sign_in_as(page, asgi_server)
    page.fill("#text", "add a task: buy milk tomorrow")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{CARD} .human-cancel")
    assert page.inner_text(f"{CARD} .human-cancel") == "Cancel"
    shoot(page, "waiting-card-en")

    # The user chats on in the same session: the composer is free while the turn is parked.
    page.fill("#text", "hello")
    page.keyboard.press("Enter")
    page.locator(ANSWERS).nth(0).wait_for()
    assert page.locator(CARD).count() == 1  # the wait is still live

    staff = page.context.browser.new_context(locale="zh-TW").new_page()
    staff.goto(asgi_server + "/accounts/login/?next=/inbox/")
    staff.fill("#id_username", "stella")
    staff.fill("#id_password", "pw")
    staff.click("button[type=submit]")
    staff.context.add_cookies([{"name": "django_language", "value": "zh-hant", "url": asgi_server}])
    staff.goto(asgi_server + "/inbox/")
    staff.wait_for_selector(".inbox-item[data-status=pending]")
    text = staff.inner_text(".inbox-item .meta") + staff.inner_text(".inbox-item .call-args")
    assert "create_task" not in text and "{" not in text, text  # no slug, no raw JSON shown
    assert "buy milk" in text
    assert "buy milk" in staff.text_content(".inbox-item details pre")  # one click away
    for theme in ("light", "dark"):
        staff.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        shoot(staff, f"inbox-zh-hant-{theme}")
    staff.set_viewport_size({"width": 390, "height": 844})
    shoot(staff, "inbox-zh-hant-390")
    staff.set_viewport_size({"width": 1280, "height": 900})

    staff.click(".inbox-item button.primary")
    staff.wait_for_selector("#inbox-done .inbox-item[data-status=approved]")
    page.locator(ANSWERS).nth(1).wait_for()
    assert page.locator(CARD).count() == 0
    # The late answer names the question it answers; the answer to "hello" does not.
    assert page.locator(".msg.agent .reply-to").count() == 1
    assert "buy milk" in page.inner_text(".msg.agent .reply-to")
    shoot(page, "both-answers-en")
    assert page.console_errors == []
