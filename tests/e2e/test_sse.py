"""Server-Sent Events with a real HTTP client against a real server, through a delegated turn."""

from __future__ import annotations

import json
import threading
import uuid

import httpx
import pytest

from agents.demo import seed_demo_agents
from chat.tokens import token_create
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(db) -> str:
    """Alice's API token, with the demo team ready (written before the server starts)."""
    seed_demo_agents()
    return token_create(user=make_user("alice"), name="sse")[1]


def read_events(response: httpx.Response, until, events: list[dict]) -> None:
    """Parse `event:`/`data:` blocks into `events` until `until(event)`."""
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            event = json.loads("\n".join(data))
            data = []
            events.append(event)
            if until(event):
                return


def root_done(event: dict) -> bool:
    return event["type"] == "run.completed" and (event["agent"] or {}).get("depth") == 0


def test_a_delegated_turn_streams_over_sse_and_a_reconnect_replays_it(asgi_server, token):
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=asgi_server, headers=headers, timeout=20) as http:
        sid = str(uuid.uuid4())
        assert http.post("/api/v1/sessions/", json={"id": sid}).status_code == 201
        events: list[dict] = []
        with http.stream("GET", f"/api/v1/sessions/{sid}/events/") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            reader = threading.Thread(target=read_events, args=(stream, root_done, events))
            reader.start()
            sent = http.post(
                f"/api/v1/sessions/{sid}/messages/",
                json={"id": str(uuid.uuid4()), "text": "budget check: 1200*0.05?"},
            )
            assert sent.status_code == 202
            reader.join(timeout=20)
        assert events[0]["type"] == "session.snapshot" and events[0]["data"]["messages"] == []
        kinds = [(e["type"], (e["agent"] or {}).get("name")) for e in events]
        assert ("delegation.started", "assistant") in kinds
        assert ("delegation.started", "finance") in kinds
        assert ("tool.called", "math") in kinds
        math = next(e for e in events if e["type"] == "tool.called")
        assert math["agent"]["path"] == ["assistant", "finance", "math"]
        answer = [e for e in events if e["type"] == "message.completed"][-1]
        assert answer["agent"]["depth"] == 0 and "60" in answer["data"]["text"]

        replay: list[dict] = []
        with http.stream(
            "GET", f"/api/v1/sessions/{sid}/events/", headers={"Last-Event-ID": "42"}
        ) as again:
            read_events(again, lambda e: True, replay)
        stored = {m["id"]: m for m in replay[0]["data"]["messages"]}
        streamed_ids = {e["message_id"] for e in events if e["message_id"]}
        assert set(stored) == streamed_ids
        assert stored[answer["message_id"]]["content"] == answer["data"]["text"]

        run_id = sent.json()["run_id"]
        turn: list[dict] = []
        with http.stream("GET", f"/api/v1/runs/{run_id}/events/") as finished:
            read_events(finished, lambda e: False, turn)  # the server ends a finished turn
        assert [e["type"] for e in turn] == ["session.snapshot"]
        assert len(turn[0]["data"]["messages"]) == len(stored)


def test_event_streams_refuse_strangers(asgi_server, token):
    other = token_create(user=make_user("mallory"), name="x")[1]
    with httpx.Client(base_url=asgi_server, timeout=10) as http:
        sid = str(uuid.uuid4())
        http.post(
            "/api/v1/sessions/", json={"id": sid}, headers={"Authorization": f"Bearer {token}"}
        )
        assert http.get(f"/api/v1/sessions/{sid}/events/").status_code == 401
        response = http.get(
            f"/api/v1/sessions/{sid}/events/", headers={"Authorization": f"Bearer {other}"}
        )
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "session_not_found"
