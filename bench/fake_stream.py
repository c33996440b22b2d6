"""A slow OpenAI-compatible model for load benches: every answer streams for `--seconds`.

An asyncio server in its own process (so the bench's own work never slows it), speaking the
Chat Completions streaming wire format on kept-alive HTTP/1.1 connections: it holds hundreds
of streams at once on one thread. The agent named in the system prompt ("You are NAME.")
decides the answer: `--lead` asks `--expert` (the platform's `delegate` tool) when the user
spoke last; every other request gets a text answer, each piece "@<unix time it was sent> " (a
client measures how late each piece reaches it). Each answer is `--chunks` pieces spread over
`--seconds`. `GET /stats` answers {"active", "max_active", "served"}; `GET /stats?reset`
then starts `max_active` again from the streams open now.

Usage: .venv/bin/python bench/fake_stream.py --port 8765 [--seconds 2] [--chunks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import time
from typing import Any

WHO = re.compile(r"You are (\w+)\.")
STAMP = "@"  # a text piece is "@<unix time it was sent> ", written as it is sent


class Model:
    """What the fake answers, and how many streams it holds."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.seconds, self.chunks = options.seconds, options.chunks
        self.lead, self.expert = options.lead, options.expert
        self.active = self.max_active = self.served = 0

    def events(self, body: dict[str, Any]) -> list[dict[str, Any] | str]:
        """The answer's stream events: a delegate call for the lead's first call, else text."""
        messages = body.get("messages") or [{}]
        who = WHO.match(str(messages[0].get("content") or ""))
        base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0}
        base["model"] = body.get("model", "fake")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
        if who and who.group(1) == self.lead and messages[-1].get("role") == "user":
            arguments = json.dumps({"target": self.expert, "task": messages[-1]["content"]})
            size = -(-len(arguments) // self.chunks)
            start = {"index": 0, "id": "call_1", "type": "function"}
            start["function"] = {"name": "delegate", "arguments": ""}
            events.append(chunk({"tool_calls": [start]}))
            events += [
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": arguments[i:][:size]}}]}
                )
                for i in range(0, len(arguments), size)
            ]
            events.append(chunk({}, "tool_calls"))
        else:
            events += [chunk({"content": STAMP}) for _ in range(self.chunks)]
            events.append(chunk({}, "stop"))
        usage = {"prompt_tokens": 50, "completion_tokens": self.chunks, "total_tokens": 70}
        events += [{**base, "choices": [], "usage": usage}, "[DONE]"]
        return events


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes] | None:
    """One request: method, path and body; None when the client closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
    length = int({k.lower(): v for k, v in headers.items()}.get("content-length", 0))
    return method, path, await reader.readexactly(length) if length else b""


def _content(event: dict[str, Any]) -> str | None:
    """A chunk's text, if it has any."""
    return event["choices"][0]["delta"].get("content") if event["choices"] else None


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _stream(model: Model, writer: asyncio.StreamWriter, body: dict[str, Any]) -> None:
    """Send one answer, its pieces spread over `model.seconds`."""
    events = model.events(body)
    pieces = sum(1 for event in events if isinstance(event, dict) and event["choices"])
    interval = model.seconds / max(1, pieces - 1)
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
    )
    for index, event in enumerate(events):
        if index and isinstance(event, dict) and event["choices"]:
            await asyncio.sleep(interval)
        if isinstance(event, dict) and _content(event) == STAMP:
            delta = {"content": f"{STAMP}{time.time():.3f} "}
            event = {**event, "choices": [{**event["choices"][0], "delta": delta}]}
        data = event if isinstance(event, str) else json.dumps(event)
        writer.write(_chunked(f"data: {data}\n\n".encode()))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


def _json(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
    payload = json.dumps(answer).encode()
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
    )


async def _serve(model: Model, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while request := await _read_request(reader):
            method, path, raw = request
            if method == "GET" and path.startswith("/stats"):
                _json(writer, {k: getattr(model, k) for k in ("active", "max_active", "served")})
                if "reset" in path:
                    model.max_active = model.active
                await writer.drain()
                continue
            model.active += 1
            model.max_active = max(model.max_active, model.active)
            try:
                await _stream(model, writer, json.loads(raw or b"{}"))
            finally:
                model.active -= 1
                model.served += 1
    except ConnectionError:
        pass  # a client that hung up mid-answer (a stopped run)
    finally:
        writer.close()


async def main(options: argparse.Namespace) -> None:
    """Serve until killed."""
    model = Model(options)
    server = await asyncio.start_server(
        lambda r, w: _serve(model, r, w), "127.0.0.1", options.port, backlog=2048
    )
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--lead", default="lead")
    parser.add_argument("--expert", default="expert")
    asyncio.run(main(parser.parse_args()))
