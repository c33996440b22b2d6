"""A local stand-in for LINE's Messaging API (reply, push with retry keys, loading animation),
recording what it was sent; it can answer 429 a given number of times."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeLine:
    """What the fake received, and how it should answer."""

    replies: list[dict[str, Any]] = field(default_factory=list)
    pushes: list[dict[str, Any]] = field(default_factory=list)
    loading: list[dict[str, Any]] = field(default_factory=list)
    retry_keys: set[str] = field(default_factory=set)
    used_tokens: set[str] = field(default_factory=set)
    rate_limited: int = 0  # answer this many pushes or replies with 429 first
    # Set: the next reply or push is taken (recorded, as LINE would show it) and then left
    # unanswered until `release` is set, as when the sender dies before hearing the answer.
    hold_next: bool = False
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def texts(self) -> list[str]:
        """Every text sent to any chat, replies and pushes, in order received."""
        return [m["text"] for body in [*self.replies, *self.pushes] for m in body["messages"]]


def _sent(body: dict[str, Any]) -> dict[str, Any]:
    """LINE's answer to a send: an id per message."""
    return {
        "sentMessages": [{"id": str(i), "quoteToken": "q"} for i, _ in enumerate(body["messages"])]
    }


def _handler(fake: FakeLine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            if self.headers.get("Authorization") != "Bearer line-token":
                return self._answer(401, {"message": "Authentication failed"})
            held = False
            with fake.lock:
                if self.path == "/v2/bot/chat/loading/start":
                    fake.loading.append(body)
                    return self._answer(202, {})
                if fake.rate_limited > 0:
                    fake.rate_limited -= 1
                    return self._answer(429, {"message": "Too Many Requests"})
                if self.path == "/v2/bot/message/reply":
                    if body["replyToken"] in fake.used_tokens:
                        return self._answer(400, {"message": "Invalid reply token"})
                    fake.used_tokens.add(body["replyToken"])
                    fake.replies.append(body)
                    held = fake.hold_next
                    fake.hold_next = False
                if self.path == "/v2/bot/message/push":
                    key = self.headers.get("X-Line-Retry-Key")
                    if key and key in fake.retry_keys:
                        return self._answer(409, {"message": "The retry key is already accepted"})
                    if key:
                        fake.retry_keys.add(key)
                    fake.pushes.append(body)
                    held = fake.hold_next
                    fake.hold_next = False
            if self.path in ("/v2/bot/message/reply", "/v2/bot/message/push"):
                if held:
                    fake.holding.set()
                    fake.release.wait(60)
                return self._answer(200, _sent(body))
            return self._answer(404, {"message": "Not found"})

    return Handler


def start_fake_line() -> tuple[FakeLine, ThreadingHTTPServer]:
    """A running fake on a free loopback port; its URL is `fake.url`."""
    fake = FakeLine()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return fake, server
