"""When Redis (the channel layer) dies, sockets close with 4503 and SSE streams end with an
`error` event: cleanly, with the reason logged and no traceback."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from chat.models import ChatSession
from chat.tokens import token_create
from tests.e2e.conftest import session_cookie
from tests.factories import make_agent, make_user
from tests.server_logs import output_path

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


def test_a_dying_channel_layer_closes_sockets_and_streams_cleanly(start_asgi_server, private_redis):
    user = make_user("alice")
    session = ChatSession.objects.create(
        id=uuid.uuid4(), user=user, agent=make_agent("assistant", is_entry=True)
    )
    token = token_create(user=user, name="sse")[1]
    log = output_path("daphne.log")
    log_start = log.stat().st_size if log.exists() else 0
    server = start_asgi_server(REDIS_URL=private_redis.url)
    ws_url = server.url.replace("http", "ws") + "/ws/chat/"
    headers = {"Authorization": f"Bearer {token}"}
    with (
        ws_connect(
            ws_url, origin=server.url, additional_headers={"Cookie": session_cookie(user)}
        ) as ws,
        httpx.Client(base_url=server.url, timeout=30) as http,
        http.stream("GET", f"/api/v1/sessions/{session.id}/events/", headers=headers) as stream,
    ):
        ws.send(json.dumps({"type": "session.join", "session_id": str(session.id)}))
        assert json.loads(ws.recv(timeout=10))["type"] == "session.snapshot"
        lines = stream.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))

        private_redis.kill()

        with pytest.raises(ConnectionClosed):
            while True:
                ws.recv(timeout=30)
        assert ws.close_code == 4503  # relay failed: the page reconnects
        events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert [e["type"] for e in events] == ["error"]  # then the server ended the stream
    assert events[0]["data"]["code"] == "stream_interrupted"
    assert events[0]["session_id"] == str(session.id)
    written = log.read_bytes()[log_start:].decode(errors="replace")
    assert "closed (4503): channel layer failed" in written
    assert "SSE stream of" in written
    assert "Traceback" not in written
