"""The platform as an MCP server (streamable HTTP) at /mcp/, for callers with an API token."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from channels.db import database_sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.utils import translation
from django.utils.translation import gettext as _
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import exceptions

from chat.interop.mcp_tools import CALLER_KEY, Caller, build_server
from chat.tokens import ApiTokenAuthentication

ASGIApp = Any
PATHS = ("/mcp", "/mcp/")


def mcp_mounted(app: ASGIApp) -> ASGIApp:
    """`app` with /mcp/ (and /mcp) answered by the MCP endpoint instead."""

    async def route(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in PATHS:
            await endpoint(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route


async def endpoint(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Authenticate the API token (401 before anything starts), then let the SDK answer."""
    request = ASGIRequest(scope, io.BytesIO())  # headers only: the SDK reads the body
    try:
        found = await database_sync_to_async(ApiTokenAuthentication().authenticate)(request)
    except exceptions.AuthenticationFailed as exc:
        return await unauthorized(send, "authentication_failed", str(exc.detail))
    if found is None:
        message = _("Send 'Authorization: Bearer <token>' with an API token.")
        return await unauthorized(send, "not_authenticated", message)
    language = translation.get_language_from_request(request)
    caller = Caller(user=found[0], language=language)
    manager = await SESSIONS.running()
    await manager.handle_request({**scope, CALLER_KEY: caller}, receive, send)


async def unauthorized(send: Any, code: str, message: str) -> None:
    """HTTP 401 with the API's error body."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"www-authenticate", b'Bearer realm="mcp"'),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LazySessions:
    """The SDK's session manager, running in the serving event loop.

    Its `run()` must be entered before it answers anything (an ASGI lifespan usually does that),
    but daphne sends no lifespan events: so the first request starts a task in the serving loop
    that enters `run()` and stays in it for the loop's life. A new loop (tests) gets a new
    manager, since one can run only once. Stateless: every POST is a whole exchange (the
    turn's progress streams on its SSE answer), so any server process can answer any request.
    """

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.manager: StreamableHTTPSessionManager | None = None
        self.ready: asyncio.Event | None = None
        self.task: asyncio.Task[None] | None = None  # held: a loop keeps only weak references

    async def running(self) -> StreamableHTTPSessionManager:
        """The manager, started in this loop if it was not yet."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self.loop, self.ready = loop, asyncio.Event()
            self.manager = StreamableHTTPSessionManager(build_server(), stateless=True)
            self.task = loop.create_task(self.serve(self.manager, self.ready))
        assert self.ready is not None and self.manager is not None
        await self.ready.wait()
        return self.manager

    @staticmethod
    async def serve(manager: StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        """Enter the manager's run() and stay until the loop ends."""
        async with manager.run():
            ready.set()
            await asyncio.Event().wait()


SESSIONS = LazySessions()
