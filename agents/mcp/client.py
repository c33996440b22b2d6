"""The MCP client: open sessions to servers, kept on one background event loop per process.

Worker threads are synchronous; the `mcp` SDK is asynchronous. One daemon thread runs an
asyncio loop; each (server, identity) has one session on it, entered and left by a task of its
own (anyio's rule), that calls from any thread share. A session that failed, timed out or whose
stdio process died is closed and opened again by the next call, so a hung or crashed server
costs one call, not the worker.

The SDK is imported where a session opens, not with this module: the admin and every worker
import this module, and the SDK costs about 1.5 s of each process's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import httpx2

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

logger = logging.getLogger(__name__)
T = TypeVar("T")
POOL_SIZE = 64  # open sessions per process; the least recently used closes first
LIST_PAGES = 50  # a tools/list that pages on past this is cut (a server that never ends)


class McpFailure(Exception):
    """A server could not answer: `kind` is unreachable, timeout, closed or protocol."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Target:
    """How to reach one server as one identity: a key of the pool of sessions."""

    server: str  # the server's name (logs)
    transport: str  # "http" or "stdio"
    url: str = ""
    command: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    connect_timeout: float = 10.0
    identity: str = ""  # per-user servers: whose session this is
    # Per-user servers: a fresh header value for each request (a short-lived signed assertion).
    # (Not part of the key: `identity` is.)
    fresh_header: tuple[str, Callable[[], str]] | None = field(
        default=None, compare=False, hash=False
    )


Progress = Callable[[float, float | None, str | None], None]


def tools_list(target: Target, *, timeout: float) -> list[Tool]:
    """Every tool the server lists now (all pages)."""

    async def read(client: Client) -> list[Tool]:
        tools, cursor = [], None
        for _ in range(LIST_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    return _POOL.use(target, read, timeout=timeout)


def tool_call(
    target: Target,
    name: str,
    arguments: dict[str, Any],
    *,
    timeout: float,
    progress: Progress | None = None,
) -> CallToolResult:
    """Call one tool; progress notifications reach `progress` on the calling thread."""
    notes: queue.SimpleQueue[tuple[float, float | None, str | None]] = queue.SimpleQueue()
    listener = progress

    async def noted(progress: float, total: float | None, message: str | None) -> None:
        notes.put((progress, total, message))

    async def call(client: Client) -> CallToolResult:
        return await client.call_tool(
            name,
            arguments,
            read_timeout_seconds=timeout,
            progress_callback=noted if listener is not None else None,
        )

    return _POOL.use(target, call, timeout=timeout, notes=notes, progress=listener)


def sessions_close() -> None:
    """Close every open session of this process (tests; a changed server)."""
    _POOL.close_all()


def session_close(server: str, identity: str | None = None) -> None:
    """Close the sessions of one server (its settings changed, or it was disabled), or only
    those of one user (`identity`: the start of theirs, "<user id>:")."""
    _POOL.close_server(server, identity)


class _Session:
    """One open session, entered and left by its own task on the loop."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.client: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.broken = False
        self.active = 0  # calls in flight: an idle session may be evicted, a busy one not
        self.task = asyncio.create_task(self._hold())

    async def _hold(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await _client(self.target, stack)
                self.client.set_result(client)
                await self.stop.wait()
        except BaseException as exc:  # the SDK raises groups and cancellations here
            if not self.client.done():
                self.client.set_exception(_failure_of(exc, self.target))
            else:
                logger.info("MCP session to %s ended: %r", self.target.server, exc)
        finally:
            self.broken = True
            if not self.client.done():
                self.client.set_exception(McpFailure("closed", "The session closed."))


async def _client(target: Target, stack: contextlib.AsyncExitStack) -> Client:
    """An SDK client for a target, entered on `stack`: over streamable HTTP with its headers
    (its HTTP client closed with the session: the SDK leaves a client it was given open), or
    to a stdio process."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    if target.transport == "stdio":
        command, *args = target.command
        transport: Any = stdio_client(
            StdioServerParameters(command=command, args=args), errlog=sys.stderr
        )
    else:
        auth = _FreshHeader(*target.fresh_header) if target.fresh_header else None
        http = httpx2.AsyncClient(
            headers=dict(target.headers),
            timeout=httpx2.Timeout(target.connect_timeout, read=300.0),
            auth=auth,
        )
        await stack.enter_async_context(http)
        transport = streamable_http_client(target.url, http_client=http)
    return await stack.enter_async_context(Client(transport, mode="auto"))


class _FreshHeader(httpx2.Auth):
    """Sets a header whose value is made anew for every request (it expires soon)."""

    def __init__(self, header: str, value: Callable[[], str]) -> None:
        self.header, self.value = header, value

    def auth_flow(self, request: httpx2.Request) -> Any:
        request.headers[self.header] = self.value()
        yield request


class _Pool:
    """The process's sessions by target, on one daemon loop thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sessions: OrderedDict[Target, _Session] = OrderedDict()

    def use(
        self,
        target: Target,
        work: Callable[[Client], Coroutine[Any, Any, T]],
        *,
        timeout: float,
        notes: queue.SimpleQueue[Any] | None = None,
        progress: Progress | None = None,
    ) -> T:
        """Run `work` with the target's session (opened if needed) within the timeouts."""
        future = asyncio.run_coroutine_threadsafe(self._use(target, work, timeout), self._loop())
        while True:
            try:
                result = future.result(timeout=0.05 if notes is not None else None)
            except TimeoutError:
                if not future.done():
                    _drain(notes, progress)
                    continue
                raise
            _drain(notes, progress)
            return result

    async def _use(
        self, target: Target, work: Callable[[Client], Coroutine[Any, Any, T]], timeout: float
    ) -> T:
        session = self._session(target)
        try:
            client = await asyncio.wait_for(asyncio.shield(session.client), target.connect_timeout)
        except TimeoutError:
            self._drop(session)
            raise McpFailure(
                "unreachable", f"No answer from {target.server} within {target.connect_timeout} s."
            ) from None
        except McpFailure:
            self._drop(session)
            raise
        session.active += 1
        try:
            # A margin over the SDK's own read timeout, for a session that answers nothing at
            # all any more (it is closed: the next call opens a new one).
            return await asyncio.wait_for(work(client), timeout + 1.0)
        except TimeoutError:
            self._drop(session)
            raise McpFailure(
                "timeout", f"{target.server} did not answer within {timeout} s."
            ) from None
        except McpFailure:
            raise
        except Exception as exc:
            failure = _failure_of(exc, target)
            # A session that broke is closed. One that timed out is closed only when no other
            # call is using it (a hung server restarts; others' calls are not cut off).
            hung = failure.kind == "timeout" and session.active == 1
            if failure.kind in ("unreachable", "closed") or session.broken or hung:
                self._drop(session)
            raise failure from exc
        finally:
            session.active -= 1

    def _session(self, target: Target) -> _Session:
        session = self.sessions.get(target)
        if session is None or session.broken:
            session = _Session(target)
            self.sessions[target] = session
            self._evict_idle()
        self.sessions.move_to_end(target)
        return session

    def _evict_idle(self) -> None:
        """Past POOL_SIZE, close the least recently used sessions that no call is using."""
        idle = [t for t, s in self.sessions.items() if s.active == 0]
        for target in idle[: max(0, len(self.sessions) - POOL_SIZE)]:
            self.sessions.pop(target).stop.set()

    def _drop(self, session: _Session) -> None:
        if self.sessions.get(session.target) is session:
            del self.sessions[session.target]
        session.broken = True
        session.stop.set()
        if not session.task.done():
            # A hung stdio server never lets its session leave: cancel it (the process ends).
            asyncio.get_running_loop().call_later(2.0, session.task.cancel)

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self.lock:
            if self.loop is None or not self.loop.is_running():
                loop = asyncio.new_event_loop()
                started = threading.Event()
                thread = threading.Thread(
                    target=_run_loop, args=(loop, started), name="mcp-client", daemon=True
                )
                thread.start()
                started.wait()
                self.loop = loop
            return self.loop

    def close_all(self) -> None:
        self._close(lambda target: True)

    def close_server(self, server: str, identity: str | None = None) -> None:
        self._close(
            lambda t: t.server == server and (identity is None or t.identity.startswith(identity))
        )

    def _close(self, which: Callable[[Target], bool]) -> None:
        """Close the matching sessions, all at once, waiting a few seconds at most (a server
        that is down does not hold up the save that asked for this)."""
        if self.loop is None or not self.loop.is_running():
            return

        async def close() -> None:
            sessions = [s for t, s in list(self.sessions.items()) if which(t)]
            for session in sessions:
                self._drop(session)
            if sessions:
                await asyncio.wait([s.task for s in sessions], timeout=3.0)

        future = asyncio.run_coroutine_threadsafe(close(), self.loop)
        with contextlib.suppress(TimeoutError):
            future.result(timeout=5)


def _run_loop(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    loop.run_forever()


def _drain(notes: queue.SimpleQueue[Any] | None, progress: Progress | None) -> None:
    """Hand the progress notes that arrived to `progress`, on the calling thread."""
    while notes is not None and progress is not None and not notes.empty():
        progress(*notes.get_nowait())


def _failure_of(exc: BaseException, target: Target) -> McpFailure:
    """A plain failure for whatever the SDK raised (it may be an exception group)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import REQUEST_TIMEOUT

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpFailure):
        return exc
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MCPError):
        text = exc.error.message
        if exc.code == REQUEST_TIMEOUT:
            return McpFailure("timeout", f"{target.server} did not answer in time: {text}")
    if isinstance(exc, OSError | httpx2.TransportError):
        return McpFailure("unreachable", f"Cannot reach {target.server}: {text}")
    if "closed" in text.lower() or isinstance(exc, EOFError):
        return McpFailure("closed", f"{target.server} closed the connection: {text}")
    return McpFailure("protocol", f"{target.server} answered with an error: {text}")


_POOL = _Pool()
