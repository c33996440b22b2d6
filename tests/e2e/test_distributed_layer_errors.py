"""When Redis (the channel layer) dies or restarts, sockets close with 4503 and SSE streams end
with an `error` event: cleanly, with the reason logged and no traceback; keepalives keep time."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import httpx
import pytest
from asgiref.sync import async_to_sync
from channels_redis.core import RedisChannelLayer
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from chat.events import envelope, session_group
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


def test_a_redis_restart_closes_sockets_and_streams_so_clients_rejoin(
    start_asgi_server, private_redis
):
    """Redis comes back at once but has forgotten every group: without a probe the socket and
    the stream would stay open and silent forever."""
    user = make_user("alice")
    session = ChatSession.objects.create(
        id=uuid.uuid4(), user=user, agent=make_agent("assistant", is_entry=True)
    )
    token = token_create(user=user, name="sse")[1]
    server = start_asgi_server(REDIS_URL=private_redis.url, RELAY_PROBE_SECONDS="0.5")
    ws_url = server.url.replace("http", "ws") + "/ws/chat/"
    cookie = {"Cookie": session_cookie(user)}
    headers = {"Authorization": f"Bearer {token}"}
    join = json.dumps({"type": "session.join", "session_id": str(session.id)})
    with (
        ws_connect(ws_url, origin=server.url, additional_headers=cookie) as ws,
        httpx.Client(base_url=server.url, timeout=30) as http,
        http.stream("GET", f"/api/v1/sessions/{session.id}/events/", headers=headers) as stream,
    ):
        ws.send(join)
        assert json.loads(ws.recv(timeout=10))["type"] == "session.snapshot"
        lines = stream.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))

        private_redis.kill()
        private_redis.start()  # same port, empty: every group membership is gone

        with pytest.raises(ConnectionClosed):
            while True:
                ws.recv(timeout=30)
        assert ws.close_code == 4503
        events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert [(e["type"], e["data"]["code"]) for e in events] == [("error", "stream_interrupted")]
    # The page reconnects and re-joins: the session's events reach it again.
    with ws_connect(ws_url, origin=server.url, additional_headers=cookie) as ws:
        ws.send(join)
        assert json.loads(ws.recv(timeout=10))["type"] == "session.snapshot"
        delta = envelope("message.delta", session_id=session.id, data={"text": "back"})
        layer = RedisChannelLayer(hosts=[private_redis.url])
        async_to_sync(layer.group_send)(
            session_group(session.id), {"type": "message.delta", "event": delta}
        )
        assert json.loads(ws.recv(timeout=10))["data"]["text"] == "back"


def test_sse_keepalives_keep_their_rhythm_across_many_streams(start_asgi_server, private_redis):
    """Each of several quiet streams on one server gets its keepalives every interval (a
    cancelled channels_redis receive used to hold them back for tens of seconds)."""
    user = make_user("alice")
    agent = make_agent("assistant", is_entry=True)
    sessions = [
        ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent) for _ in range(6)
    ]
    token = token_create(user=user, name="sse")[1]
    server = start_asgi_server(REDIS_URL=private_redis.url, SSE_KEEPALIVE_SECONDS="0.3")
    headers = {"Authorization": f"Bearer {token}"}
    gaps: list[float] = []

    def keepalive_gaps(session: ChatSession) -> list[float]:
        seen: list[float] = []
        with httpx.Client(base_url=server.url, timeout=30) as http:
            path = f"/api/v1/sessions/{session.id}/events/"
            with http.stream("GET", path, headers=headers) as stream:
                for line in stream.iter_lines():
                    if line.startswith(": keepalive"):
                        seen.append(time.monotonic())
                        if len(seen) == 10:
                            break
        return [later - earlier for earlier, later in pairwise(seen)]

    with ThreadPoolExecutor(len(sessions)) as pool:
        for found in pool.map(keepalive_gaps, sessions):
            gaps.extend(found)
    # 0.3 s apart; a stalled stream waited 44-140 s with 15 s keepalives (100x or more).
    assert max(gaps) < 3, sorted(gaps)[-5:]
