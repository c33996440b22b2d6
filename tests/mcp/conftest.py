"""Fixtures for MCP tests: the test server over stdio and streamable HTTP, as McpServer rows."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agents.mcp.client import sessions_close
from agents.mcp.models import McpServer
from tests.e2e.conftest import flush_redis, workers  # noqa: F401  (real Celery workers)

SERVER = [sys.executable, "-m", "tests.mcp.server"]


@pytest.fixture(autouse=True)
def fresh_sessions() -> Iterator[None]:
    """Each test opens its own sessions (the pool is per process); closed at its end."""
    yield
    sessions_close()


@pytest.fixture
def ledger_log(tmp_path: Path) -> Path:
    """The file the test server's side-effect tools append to."""
    path = tmp_path / "ledger.log"
    path.write_text("")
    return path


def ledger_lines(path: Path) -> list[str]:
    """What the test server's side-effect tools recorded, in order."""
    return path.read_text().splitlines()


def stdio_command(ledger_log: Path, variant: int = 1) -> list[str]:
    """The test server's stdio command line (a variant changes its tools)."""
    return [*SERVER, "--variant", str(variant), "--log", str(ledger_log)]


@pytest.fixture
def stdio_server(db, settings, ledger_log: Path) -> McpServer:
    """The test server over stdio, as the server "ledger" (synced by the test)."""
    settings.MCP_STDIO_COMMANDS = {"test-ledger": stdio_command(ledger_log)}
    return McpServer.objects.create(
        name="ledger",
        display_name="Ledger",
        transport="stdio",
        command="test-ledger",
        call_timeout=10,
    )


@contextmanager
def http_server_process(ledger_log: Path, *options: str) -> Iterator[str]:
    """The test server over streamable HTTP in a process of its own (with `options`, e.g.
    "--record-delay", "30"); its URL while it runs."""
    port = free_port()
    process = subprocess.Popen(
        [*SERVER, "--http", str(port), "--log", str(ledger_log), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def http_process(ledger_log: Path) -> Iterator[str]:
    """The test server over streamable HTTP in a process of its own; its URL."""
    with http_server_process(ledger_log) as url:
        yield url


@pytest.fixture
def http_server(db, http_process: str) -> McpServer:
    """The HTTP test server as the server "ledger-http"."""
    return McpServer.objects.create(
        name="ledger-http", display_name="Ledger (HTTP)", transport="http", url=http_process
    )


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: Any, timeout: float = 20.0) -> None:
    """Poll until the process accepts connections on the port (or fail with its exit)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the test MCP server exited with {process.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the test MCP server did not listen on {port}")
