"""Events the page did not ask for, injected into the live socket: reminders, unknown types,
garbage and errors. The socket still talks to the real server underneath."""

from __future__ import annotations

import json
import uuid

import pytest

from chat.models import ChatMessage, ChatSession
from tests.e2e.conftest import screenshot, sign_in_as
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

PLANS = uuid.UUID("5a0c0d57-6a4e-4a43-9a55-2b8b8c1f0a01")
REMINDERS = uuid.UUID("5a0c0d57-6a4e-4a43-9a55-2b8b8c1f0a02")


@pytest.fixture
def alice_with_a_chat(db):
    """alice with a chat and her (older) Reminders chat, written before the browser starts."""
    alice = make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True, tool_keys=["calculate"])
    ChatSession.objects.create(id=REMINDERS, user=alice, title="Reminders")
    session = ChatSession.objects.create(id=PLANS, user=alice, title="Plans")
    ChatMessage.objects.create(id=uuid.uuid4(), session=session, role="user", content="hi")


def reminder(session_id: uuid.UUID, reminder_id: int, content: str, late: bool = False) -> str:
    """A `reminder.due` event as reminders/delivery.py sends it."""
    message_id = str(uuid.uuid5(session_id, str(reminder_id)))
    tag = {"kind": "entry", "name": "reminders", "display_name": "Reminders", "depth": 0}
    return json.dumps(
        {
            "type": "reminder.due",
            "session_id": str(session_id),
            "run_id": None,
            "message_id": message_id,
            "agent": None,
            "seq": None,
            "data": {
                "reminder_id": reminder_id,
                "content": content,
                "remind_at": "2026-01-05T08:00:00+00:00",
                "late": late,
                "message": {
                    "id": message_id,
                    "role": "agent",
                    "run_id": None,
                    "agent": {**tag, "path": ["reminders"]},
                    "content": content,
                    "model": "",
                    "tool": None,
                    "status": "completed",
                    "created_at": "2026-01-05T08:00:00+00:00",
                },
            },
        }
    )


def test_reminders_toast_and_land_in_their_chat_unknown_events_are_ignored(
    alice_with_a_chat, asgi_server, browser_page
):
    page = browser_page
    sockets = []

    def relay(ws):
        ws.connect_to_server()  # frames keep flowing both ways; we may add our own
        sockets.append(ws)

    page.route_web_socket("**/ws/chat/", relay)
    sign_in_as(page, asgi_server)
    assert page.locator("#sessions li a").all_inner_texts() == ["Plans", "Reminders"]
    page.click("#sessions a:text('Plans')")
    page.wait_for_selector(".msg.user:has-text('hi')")
    ws = sockets[-1]

    ws.send(json.dumps({"type": "future.thing", "session_id": str(PLANS), "data": {"x": 1}}))
    ws.send("this is not json")
    ws.send(json.dumps(["not", "an", "object"]))
    ws.send(reminder(PLANS, 7, "Water the plants"))
    toast = page.locator(".toast", has_text="Water the plants")
    toast.wait_for()
    assert toast.locator("strong").inner_text() == "Reminder"
    reminder_msg = page.locator(".msg.agent", has_text="Water the plants")
    assert reminder_msg.locator("header").inner_text() == "Reminders"
    page.wait_for_function(
        "() => document.getElementById('announcer').textContent === 'Reminder: Water the plants'"
    )
    ws.send(reminder(PLANS, 7, "Water the plants"))  # delivered twice: shown once
    page.wait_for_timeout(200)
    assert reminder_msg.count() == 1

    ws.send(reminder(REMINDERS, 8, "Call the bank", late=True))
    other = page.locator(".toast", has_text="Call the bank")
    other.wait_for()
    assert other.locator("strong").inner_text() == "Reminder (late)"
    assert page.locator(".msg", has_text="Call the bank").count() == 0  # another chat
    assert page.locator("#sessions li a").first.inner_text() == "Reminders"
    screenshot(page, "reminder-toasts")
    toast.locator("button.close").click()
    assert toast.count() == 0

    ws.send(json.dumps({"type": "error", "data": {"code": "internal_error", "message": "Oops."}}))
    page.wait_for_selector("#notice:text('Oops.')")

    # The page still works: a real turn on the real server.
    page.fill("#text", "what is 2+2?")
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.agent[data-status=completed]:has-text('2+2 = 4.')")
    assert page.is_hidden("#notice")  # sending clears the old notice
    other.locator("button:text('Open chat')").click()
    page.wait_for_selector("#sessions li.active a:text('Reminders')")
    assert page.console_errors == []
