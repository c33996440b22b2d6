"""Sockets and SSE streams on the distributed stack stay alive through long quiet spells."""

from __future__ import annotations

import json
import threading
import time
import uuid

import httpx
import pytest
from django.conf import settings
from websockets.sync.client import connect as ws_connect

from chat.events import emit, envelope, flush_events
from chat.models import ChatSession
from chat.tokens import token_create
from tests.e2e.conftest import session_cookie
from tests.factories import make_agent, make_user

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

IDLE_SECONDS = 30  # several times the redis client's default socket timeout (5 s)


def sse_events(response: httpx.Response, into: list[dict]) -> None:
    """Collect the stream's events until the one that says "wake" (or the stream ends)."""
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            into.append(json.loads("\n".join(data)))
            data = []
            if into[-1]["data"].get("message") == "wake":
                return


def test_socket_and_sse_stream_receive_an_event_after_idling(start_asgi_server, flush_redis):
    user = make_user("alice")
    agent = make_agent("assistant", is_entry=True)
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
    token = token_create(user=user, name="idle")[1]
    cookie = session_cookie(user)
    server = start_asgi_server(REDIS_URL=settings.REDIS_URL)
    ws_url = server.url.replace("http", "ws") + "/ws/chat/"

    with (
        ws_connect(ws_url, origin=server.url, additional_headers={"Cookie": cookie}) as ws,
        httpx.Client(base_url=server.url, timeout=IDLE_SECONDS * 2) as http,
        http.stream(
            "GET",
            f"/api/v1/sessions/{session.id}/events/",
            headers={"Authorization": f"Bearer {token}"},
        ) as stream,
    ):
        streamed: list[dict] = []
        reader = threading.Thread(target=sse_events, args=(stream, streamed), daemon=True)
        reader.start()
        ws.send(json.dumps({"type": "session.join", "session_id": str(session.id)}))
        assert json.loads(ws.recv(timeout=10))["type"] == "session.snapshot"

        time.sleep(IDLE_SECONDS)  # nothing happens in the session meanwhile

        emit(envelope("error", session_id=session.id, data={"code": "x", "message": "wake"}))
        flush_events()
        woke = json.loads(ws.recv(timeout=10))
        assert woke["type"] == "error" and woke["data"]["message"] == "wake"
        reader.join(timeout=10)
    assert [e["type"] for e in streamed] == ["session.snapshot", "error"]
    assert streamed[1]["data"]["message"] == "wake"
