"""A local stand-in for Slack's Web API (chat.postMessage, chat.update, chat.postEphemeral),
recording what it was sent; it can answer 429 with Retry-After a given number of times."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl


@dataclass
class FakeSlack:
    """What the fake received (messages by ts, in the order posted), and how it answers."""

    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)  # each chat.update's text, in order
    notes: list[dict[str, Any]] = field(default_factory=list)  # chat.postEphemeral's
    rate_limited: int = 0
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def texts(self) -> list[str]:
        """The text of every message now in Slack, oldest first."""
        return [message["text"] for message in self.messages.values()]


def _handler(fake: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: dict[str, Any], **headers: str) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            if self.headers.get("Content-Type", "").startswith("application/json"):
                body = json.loads(raw or "{}")
            else:
                body = dict(parse_qsl(raw))
            if self.headers.get("Authorization") != "Bearer xoxb-test":
                return self._answer(200, {"ok": False, "error": "invalid_auth"})
            method = self.path.rsplit("/", 1)[-1]
            with fake.lock:
                fake.calls.append(method)
                if fake.rate_limited > 0:
                    fake.rate_limited -= 1
                    return self._answer(
                        429, {"ok": False, "error": "ratelimited"}, **{"Retry-After": "0"}
                    )
                if method == "chat.postEphemeral":
                    fake.notes.append(body)
                    return self._answer(200, {"ok": True, "message_ts": "1.1"})
                if method == "chat.postMessage":
                    ts = f"{1700000000 + len(fake.messages)}.000100"
                    fake.messages[ts] = {**body, "ts": ts, "blocks": _blocks(body.get("blocks"))}
                    return self._answer(200, {"ok": True, "channel": body["channel"], "ts": ts})
                if method == "chat.update":
                    if body["ts"] not in fake.messages:
                        return self._answer(200, {"ok": False, "error": "message_not_found"})
                    fake.messages[body["ts"]]["text"] = body["text"]
                    if "blocks" in body:
                        fake.messages[body["ts"]]["blocks"] = _blocks(body["blocks"])
                    fake.updates.append(body["text"])
                    return self._answer(
                        200, {"ok": True, "channel": body["channel"], "ts": body["ts"]}
                    )
            return self._answer(200, {"ok": False, "error": "unknown_method"})

    return Handler


def _blocks(blocks: Any) -> list[Any]:
    """Blocks as sent: a JSON list, or its text in a form-encoded call."""
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks or [])


def start_fake_slack() -> tuple[FakeSlack, ThreadingHTTPServer]:
    """A running fake on a free loopback port; its base URL (…/api/) is `fake.url`."""
    fake = FakeSlack()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/api/"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return fake, server
