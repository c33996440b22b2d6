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


def agent_event(kind: str, run_id: uuid.UUID, message_id: uuid.UUID, seq: int, **data) -> str:
    """An event of the entry agent's run in the Plans chat."""
    tag = {"kind": "entry", "name": "assistant", "display_name": "Assistant", "depth": 0}
    return json.dumps(
        {
            "type": kind,
            "session_id": str(PLANS),
            "run_id": str(run_id),
            "message_id": str(message_id),
            "agent": {**tag, "path": ["assistant"]},
            "seq": seq,
            "data": data,
        }
    )


def test_a_stopped_message_keeps_the_longer_text_it_showed(
    alice_with_a_chat, asgi_server, browser_page
):
    """docs/protocol.md: a `cancelled` message.completed carries the text saved so far (saved
    every 0.3 s), so the page keeps what it already showed when that continues the saved text;
    any other completion replaces the text."""
    page = browser_page
    sockets = []
    page.route_web_socket("**/ws/chat/", lambda ws: (ws.connect_to_server(), sockets.append(ws)))
    sign_in_as(page, asgi_server)
    page.click("#sessions a:text('Plans')")
    page.wait_for_selector(".msg.user:has-text('hi')")
    ws = sockets[-1]
    run, stopped, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    ws.send(agent_event("message.started", run, stopped, 1, model="offline"))
    ws.send(agent_event("message.delta", run, stopped, 2, text="Once upon a time ", offset=0))
    ws.send(agent_event("message.delta", run, stopped, 3, text="there was", offset=17))
    body = page.locator(f".msg.agent[data-message-id='{stopped}'] .body")
    page.wait_for_function(
        f"() => document.querySelector(\"[data-message-id='{stopped}'] .body\")"
        "?.textContent.includes('there was')"
    )
    ws.send(
        agent_event("message.completed", run, stopped, 1001, text="Once upon", status="cancelled")
    )
    page.wait_for_selector(f".msg.agent[data-message-id='{stopped}'][data-status=cancelled]")
    assert body.inner_text() == "Once upon a time there was\n\nStopped."
    # A late delta of the stopped run changes nothing; nor does a snapshot read before the
    # worker saved the rest.
    ws.send(agent_event("message.delta", run, stopped, 4, text=" a llama", offset=26))
    saved = {"id": str(stopped), "role": "agent", "run_id": str(run), "content": "Once upon"}
    tag = {"kind": "entry", "name": "assistant", "display_name": "Assistant", "depth": 0}
    saved.update(agent={**tag, "path": ["assistant"]}, model="offline", tool=None)
    saved.update(status="cancelled", created_at="2026-01-05T08:00:00+00:00")
    hi = page.locator(".msg.user").get_attribute("data-message-id")
    user = {"id": hi, "role": "user", "run_id": None, "agent": None, "content": "hi"}
    user.update(model="", tool=None, status="completed", created_at="2026-01-05T07:59:00+00:00")
    snapshot = {"session": {"id": str(PLANS), "title": "Plans"}, "active_run_id": None}
    snapshot["messages"] = [user, saved]
    ws.send(json.dumps({"type": "session.snapshot", "session_id": str(PLANS), "data": snapshot}))
    page.wait_for_timeout(200)
    assert body.inner_text() == "Once upon a time there was\n\nStopped."

    # A cancelled text that does not continue what was shown replaces it; so does any other end.
    ws.send(agent_event("message.started", run, other, 5, model="offline"))
    ws.send(agent_event("message.delta", run, other, 6, text="Draft one", offset=0))
    ws.send(agent_event("message.completed", run, other, 7, text="Final two", status="completed"))
    other_body = page.locator(f".msg.agent[data-message-id='{other}'] .body")
    page.wait_for_function(
        f"() => document.querySelector(\"[data-message-id='{other}']\")?.dataset.status"
        " === 'completed'"
    )
    assert other_body.inner_text() == "Final two"
    screenshot(page, "stopped-keeps-shown-text")
    assert body.inner_text() == "Once upon a time there was\n\nStopped."
    assert page.console_errors == []
