"""The offline demo's LINE: the phone page writes through the real webhook (signed, over HTTP
to a live server) and shows the bot's replies as they reach the stand-in API; an unlinked
account gets its link; the stand-in refuses what LINE refuses; each person sees only their own
phone; and it is off unless DEMO_LINE is on."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from chat.channels.demo.store import demo_line_account, demo_line_seed
from delegation.models import Run
from tests.factories import make_agent, make_user
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo_line(settings, live_server):
    """DEMO_LINE on as `make run` turns it on, this test's live server as the site."""
    cache.clear()
    settings.DEMO_LINE = True
    settings.DEMO_SITE_URL = settings.SITE_URL = live_server.url
    settings.LINE_CHANNEL_SECRET = "demo-line-secret"
    settings.LINE_CHANNEL_ACCESS_TOKEN = "demo-line-token"
    settings.LINE_API_BASE_URL = f"{live_server.url}/demo/line/api"
    settings.TASKS_RUN_SYNC = True
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    return live_server


def bot_says(client) -> list[str]:
    chat = client.get("/demo/line/chat").json()
    return [m["text"] for m in chat["messages"] if m["side"] == "bot"]


def test_the_phone_reaches_the_agents_through_the_signed_webhook(client, demo_line):
    demo = make_user("demo")
    demo_line_seed(username="demo")
    client.force_login(demo)
    assert "Your account is linked" in client.get("/demo/line/").content.decode()
    sent = client.post("/demo/line/send", {"text": "what is 2+2?"})
    assert sent.json() == {"ok": True, "webhook_status": 200}
    [answer] = wait_until(lambda: bot_says(client), what="the bot's reply")
    assert "4" in answer
    assert Run.objects.get(parent=None).session.user == demo
    chat = client.get("/demo/line/chat").json()["messages"]
    assert [m["side"] for m in chat] == ["me", "bot"] and chat[0]["text"] == "what is 2+2?"


def test_an_unlinked_account_gets_its_link_and_starts_nothing(client, demo_line):
    client.force_login(make_user("erin"))
    client.post("/demo/line/send", {"text": "hello"})
    [note] = wait_until(lambda: bot_says(client), what="the link note")
    assert f"{demo_line.url}/channels/link/" in note
    assert not Run.objects.exists()


def test_each_person_sees_only_their_own_phone(client, demo_line):
    alice, bob = make_user("alice"), make_user("bob")
    client.force_login(alice)
    client.post("/demo/line/send", {"text": "my secret plan"})
    client.force_login(bob)
    assert client.get("/demo/line/chat").json()["messages"] == []
    assert demo_line_account(alice) != demo_line_account(bob)


def test_empty_or_oversized_messages_are_refused(client, demo_line):
    client.force_login(make_user("alice"))
    assert client.post("/demo/line/send", {"text": "  "}).status_code == 400
    assert client.post("/demo/line/send", {"text": "x" * 2001}).status_code == 400
    assert client.get("/demo/line/chat").json()["messages"] == []


def test_the_stand_in_refuses_what_line_refuses(client, demo_line):
    def call(method: str, body: dict, token: str = "demo-line-token", **headers: str):
        return client.post(
            f"/demo/line/api/v2/bot/{method}",
            data=json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
            **headers,
        )

    push = {"to": "U1", "messages": [{"type": "text", "text": "hi"}]}
    assert call("message/push", push, token="wrong").status_code == 401
    assert call("message/reply", {"replyToken": "unknown", "messages": []}).status_code == 400
    assert call("message/push", push, HTTP_X_LINE_RETRY_KEY="k1").status_code == 200
    assert call("message/push", push, HTTP_X_LINE_RETRY_KEY="k1").status_code == 409
    assert (
        client.post(
            "/demo/line/api/v2/bot/message/push",
            data=b"{",
            content_type="application/json",
            HTTP_AUTHORIZATION="Bearer demo-line-token",
        ).status_code
        == 400
    )


def test_the_demo_is_off_unless_switched_on(client, settings):
    settings.DEMO_LINE = False
    client.force_login(make_user("alice"))
    assert client.get("/demo/line/").status_code == 404
    api = client.post(
        "/demo/line/api/v2/bot/message/push", data=b"{}", content_type="application/json"
    )
    assert api.status_code == 404
