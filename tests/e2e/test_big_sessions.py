"""Against a real daphne: a session of several megabytes opens (its snapshot is one bounded
frame, older history paged), and an inbound frame over a megabyte is answered
`frame_too_large` with the socket kept."""

from __future__ import annotations

import json
import uuid

import pytest
from websockets.sync.client import connect as ws_connect

from chat.models import ChatMessage, ChatSession, MessageRole
from tests.e2e.conftest import session_cookie
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

ONE_MIB = 1024 * 1024


def test_a_3_mb_session_opens_and_a_2_mb_frame_keeps_the_socket(start_asgi_server):
    user = make_user("alice")
    session = ChatSession.objects.create(
        id=uuid.uuid4(), user=user, agent=make_agent("assistant", is_entry=True)
    )
    # 35 messages at the 32,000-character limit, in Chinese: over 3 MB of UTF-8.
    ChatMessage.objects.bulk_create(
        ChatMessage(
            id=uuid.uuid4(),
            session=session,
            role=MessageRole.USER if n % 2 == 0 else MessageRole.AGENT,
            content=f"{n:02d} " + "長" * 31_990,
        )
        for n in range(35)
    )
    server = start_asgi_server()
    url = server.url.replace("http", "ws") + "/ws/chat/"
    # The client's own limit is the common 1 MiB (websockets' default): every frame fits.
    with ws_connect(
        url,
        origin=server.url,
        additional_headers={"Cookie": session_cookie(user)},
        max_size=ONE_MIB,
    ) as ws:
        ws.send(json.dumps({"type": "session.join", "session_id": str(session.id)}))
        snapshot = json.loads(ws.recv(timeout=30))
        assert snapshot["type"] == "session.snapshot"
        assert snapshot["data"]["has_earlier"] is True
        seen = [m["content"][:2] for m in snapshot["data"]["messages"]]
        assert seen[-1] == "34"
        oldest = snapshot["data"]["messages"][0]["id"]
        has_earlier = True
        while has_earlier:
            ws.send(
                json.dumps(
                    {"type": "session.history", "session_id": str(session.id), "before": oldest}
                )
            )
            page = json.loads(ws.recv(timeout=30))["data"]
            seen = [m["content"][:2] for m in page["messages"]] + seen
            oldest, has_earlier = page["messages"][0]["id"], page["has_earlier"]
        assert seen == [f"{n:02d}" for n in range(35)]

        ws.send(json.dumps({"type": "message.send", "text": "x" * (2 * ONE_MIB)}))
        error = json.loads(ws.recv(timeout=30))
        assert (error["type"], error["data"]["code"]) == ("error", "frame_too_large")
        ws.send(json.dumps({"type": "session.join", "session_id": str(session.id)}))
        assert json.loads(ws.recv(timeout=30))["type"] == "session.snapshot"  # still open
