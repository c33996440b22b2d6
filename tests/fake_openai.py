"""A local OpenAI-compatible HTTP server with scripted streaming replies, for tests and benches.

It speaks the Chat Completions streaming wire format (server-sent events) so the real `openai`
client is exercised end to end: text deltas, tool-call arguments split across chunks, usage,
HTTP errors, malformed streams and stalls. It also answers the audio API (transcriptions of a
multipart upload, speech as audio/mpeg) as `FakeOpenAI.audio` scripts it.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer to one chat completion request."""

    text_chunks: list[str] = field(default_factory=list)
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments JSON)
    split: int = 3  # how many chunks each tool call's arguments are split into
    status: int = 200  # non-200: an error body instead of a stream
    error_message: str = "scripted failure"
    stall_seconds: float = 0.0  # sleep before the first byte
    malformed: bool = False  # send a chunk that is not JSON
    cut_after: int | None = None  # close the connection after this many text chunks
    stall_after: int | None = None  # after this many text chunks, sleep `stall_mid_seconds`
    stall_mid_seconds: float = 0.0
    prompt_tokens: int = 11
    completion_tokens: int = 7
    cached_tokens: int | None = None  # reported as prompt_tokens_details.cached_tokens if set
    usage: bool = True  # False: the stream carries no usage chunk (some servers send none)
    chunk_interval: float = 0.0  # seconds between text chunks (a model that takes its time)
    stamped: bool = False  # each text chunk starts with "@<unix time it was sent> " (lag benches)
    raw_unicode: bool = False  # JSON with characters unescaped (U+2028 too), as vLLM sends it
    same_call_ids: bool = False  # every tool call of the answer has the first one's id


def text(*chunks: str) -> Reply:
    """A streamed text answer."""
    return Reply(text_chunks=list(chunks))


def tool_call(name: str, arguments: dict[str, Any] | str, *, split: int = 3) -> Reply:
    """A streamed tool call (arguments given as a dict, or raw text to send as is)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(tool_calls=[(name, raw)], split=split)


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> Reply:
    """Several tool calls in one answer."""
    return Reply(tool_calls=[(name, json.dumps(args)) for name, args in calls])


def delegate(target: str, task: str = "please help", **extra: Any) -> Reply:
    """A call of the delegate tool."""
    return tool_call("delegate", {"target": target, "task": task, **extra})


def error(status: int, message: str = "scripted failure") -> Reply:
    """An HTTP error answer."""
    return Reply(status=status, error_message=message)


# A second of silence as MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz: 417 bytes a frame, side
# information all zero), which browsers decode: what /v1/audio/speech answers unless told.
SILENT_MP3 = (b"\xff\xfb\x90\x64" + bytes(413)) * 38


@dataclass
class Audio:
    """What the audio endpoints answer, until a test changes it."""

    transcript: str = "hello from the fake speech server"  # /v1/audio/transcriptions' text
    speech: bytes = SILENT_MP3  # /v1/audio/speech's body (audio/mpeg)
    status: int = 200  # non-200: an error body instead
    stall_seconds: float = 0.0  # sleep before answering (a server that times out)


class Team:
    """Scripts replies per agent: requests are told apart by the system prompt "You are NAME."
    (what tests.factories.make_agent gives). Unscripted agents answer "NAME default answer"."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.scripts: dict[str, deque[Reply | Callable[[dict[str, Any]], Reply]]] = {}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.always: dict[str, Callable[[dict[str, Any]], Reply]] = {}  # once the script is used
        self._lock = threading.Lock()
        fake.fallback = self._reply

    def script(self, agent: str, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> Team:
        """Queue replies for one agent (a callable computes a reply from the request)."""
        self.scripts.setdefault(agent, deque()).extend(replies)
        return self

    def _reply(self, body: dict[str, Any]) -> Reply:
        first = body["messages"][0]
        agent = (
            first["content"].split("\n")[0].removeprefix("You are ").rstrip(".")
            if first["role"] == "system"
            else "?"
        )
        with self._lock:
            self.requests.setdefault(agent, []).append(body)
            queue = self.scripts.get(agent)
            reply = queue.popleft() if queue else None
        if reply is None:
            reply = self.always.get(agent) or text(f"{agent} default answer")
        return reply(body) if callable(reply) else reply


class _QuietServer(ThreadingHTTPServer):
    """A threaded server that takes a client hanging up mid-stream as normal (stopped runs do)."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """Stay silent on a closed connection; report anything else as the base server does."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeOpenAI:
    """Serves scripted replies in order (then `fallback`), recording every request body."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.fallback: Callable[[dict[str, Any]], Reply] = lambda body: text("fallback answer")
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []  # the Authorization header of each request
        self.headers: list[dict[str, str]] = []  # every header of each request, lower-cased names
        self.embedding_requests: list[dict[str, Any]] = []  # bodies sent to /v1/embeddings
        self.embeddings_status = 200  # set to e.g. 500 to make /v1/embeddings fail
        # Clear it to hold /v1/embeddings answers (a slow embedding server) until it is set.
        self.embeddings_gate = threading.Event()
        self.embeddings_gate.set()
        self.audio = Audio()
        # What reached the audio endpoints: `endpoint` ("transcriptions" or "speech") and the
        # fields sent (for a transcription: `file` bytes, `filename`, `content_type`).
        self.audio_requests: list[dict[str, Any]] = []
        self.active = 0  # requests being answered now
        self.max_active = 0  # the most answered at once (shows parallel callers)
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The URL to give the client, ending in /v1."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> FakeOpenAI:
        """Queue replies for the next requests."""
        self.replies.extend(replies)
        return self

    def start(self) -> FakeOpenAI:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.replies:
                return self.replies.popleft()
        return self.fallback(body)  # outside the lock: a scripted reply may wait for another

    def _embeddings_answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        """(status, JSON body) of an embeddings request: a vector per input text."""
        status = self.embeddings_status
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        answer = (
            {
                "object": "list",
                "model": body.get("model", "fake-embed"),
                "data": [
                    {"object": "embedding", "index": i, "embedding": embedding(t)}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
            }
            if status == 200
            else {"error": {"message": "scripted embeddings failure", "type": "fake"}}
        )
        return status, json.dumps(answer).encode()

    def _audio_answer(self, endpoint: str, content_type: str, raw: bytes) -> tuple[int, str, bytes]:
        """(status, content type, body) of an audio request, recorded; as `audio` scripts it."""
        script = self.audio
        speech = endpoint == "speech"
        fields = json.loads(raw or b"{}") if speech else _multipart(content_type, raw)
        with self._lock:
            self.audio_requests.append({"endpoint": endpoint, **fields})
        if script.stall_seconds:
            time.sleep(script.stall_seconds)
        if script.status != 200:
            failure = {"error": {"message": "scripted audio failure", "type": "fake"}}
            return script.status, "application/json", json.dumps(failure).encode()
        if speech:
            return 200, "audio/mpeg", script.speech
        return 200, "application/json", json.dumps({"text": script.transcript}).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                fake.authorizations.append(self.headers.get("Authorization"))
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                # The last segment of the path names the endpoint; anything else is a chat.
                endpoint = self.path.rstrip("/").rsplit("/", 1)[-1]
                other = {
                    "embeddings": self._send_embeddings,
                    "transcriptions": self._send_audio,
                    "speech": self._send_audio,
                }.get(endpoint)
                if other is not None:
                    other(endpoint, raw)
                    return
                body = json.loads(raw or b"{}")
                reply = fake._next(body)
                with fake._lock:
                    fake.active += 1
                    fake.max_active = max(fake.max_active, fake.active)
                try:
                    if reply.stall_seconds:
                        time.sleep(reply.stall_seconds)
                    if reply.status != 200:
                        self._send_error(reply)
                    else:
                        self._send_stream(body, reply)
                finally:
                    with fake._lock:
                        fake.active -= 1

            def _send_embeddings(self, endpoint: str, raw: bytes) -> None:
                body = json.loads(raw or b"{}")
                # One small answer per request: without NODELAY, Nagle + delayed ACK add 40 ms.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with fake._lock:
                    fake.embedding_requests.append(body)
                fake.embeddings_gate.wait(timeout=120)
                status, payload = fake._embeddings_answer(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_audio(self, endpoint: str, raw: bytes) -> None:
                content_type = self.headers.get("Content-Type", "")
                status, kind, payload = fake._audio_answer(endpoint, content_type, raw)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_error(self, reply: Reply) -> None:
                payload = json.dumps({"error": {"message": reply.error_message, "type": "fake"}})
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

            def _send_stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                texts = range(1, len(reply.text_chunks) + 1)
                for index, chunk in enumerate(_chunks(body, reply)):
                    # chunk 0 is the role chunk: text chunk n is chunk n + 1
                    if reply.cut_after is not None and index == reply.cut_after + 1:
                        break  # the connection closes mid-answer, with no [DONE]
                    if reply.stall_after is not None and index == reply.stall_after + 1:
                        time.sleep(reply.stall_mid_seconds)
                    if index in texts and reply.chunk_interval and index > 1:
                        time.sleep(reply.chunk_interval)
                    if index in texts and reply.stamped:
                        piece = f"@{time.time():.6f} {reply.text_chunks[index - 1]}"
                        chunk = _text_chunk(body, piece)
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True

        return Handler


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """The fields of a multipart/form-data body; the file's bytes under `file`, with its
    `filename` and `content_type`."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            fields.update(file=data, filename=part.get_filename())
            fields["content_type"] = part.get_content_type()
        else:
            fields[str(name)] = data.decode()
    return fields


EMBEDDING_DIM = 64


def embedding(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A deterministic unit vector of a text: its lower-cased character unigrams and bigrams,
    hashed into `dim` signed buckets (texts sharing n-grams point the same way)."""
    text = text.lower()
    vector = [0.0] * dim
    for gram in [*text, *(text[i : i + 2] for i in range(len(text) - 1))]:
        if gram.isspace():
            continue
        digest = hashlib.md5(gram.encode()).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] % 2 else -1.0
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


def _event(data: Any, ascii: bool = True) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=ascii)
    return f"data: {text}\n\n".encode()


def _text_chunk(body: dict[str, Any], piece: str) -> bytes:
    """One streamed text delta."""
    return _chunks(body, Reply(text_chunks=[piece], usage=False))[1]


def _chunks(body: dict[str, Any], reply: Reply) -> list[bytes]:
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model", "fake"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _event({**base, "choices": [choice]}, ascii=not reply.raw_unicode)

    out = [chunk({"role": "assistant", "content": ""})]
    if reply.malformed:
        return [*out, _event("{not json"), _event("[DONE]")]
    out += [chunk({"content": piece}) for piece in reply.text_chunks]
    for index, (name, raw) in enumerate(reply.tool_calls):
        size = max(1, -(-len(raw) // max(1, reply.split)))
        pieces = [raw[i : i + size] for i in range(0, len(raw), size)] or [""]
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": f"call_{0 if reply.same_call_ids else index}_"
                            f"{len(body.get('messages', []))}",
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in pieces
        ]
    out.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    if reply.usage:
        out.append(_event({**base, "choices": [], "usage": usage}))
    out.append(_event("[DONE]"))
    return out
