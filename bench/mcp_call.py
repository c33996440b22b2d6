"""Benchmark: the platform's overhead of one MCP tool call over the server's own time.

The test MCP server (tests/mcp/server.py) runs over streamable HTTP in a process of its own
and over stdio. "Server" is the bare SDK client calling `add` on a session it keeps open (what
any client pays: the round trip and the server's work); "platform" is the same call as a run
makes it: the snapshot tool from the registry, arguments checked against its schema, the
server's row read, the target, the pooled session on the background loop, the result turned
into data. Prints p50/p90 in ms of CALLS calls (after a warm-up) and the overhead at p50.

Usage: .venv/bin/python bench/mcp_call.py [--calls 500]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DJANGO_DEBUG", "0")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"

from bench.harness import free_port, percentiles  # noqa: E402


def bare_samples(target: object, calls: int) -> list[float]:
    """Seconds per `add` call with the bare SDK client on one open session."""
    from mcp import Client

    async def measure() -> list[float]:
        samples = []
        async with Client(target, mode="auto") as client:
            for index in range(calls + 20):
                started = time.perf_counter()
                await client.call_tool("add", {"a": index, "b": 1})
                if index >= 20:
                    samples.append(time.perf_counter() - started)
        return samples

    return asyncio.run(measure())


def platform_samples(key: str, calls: int) -> list[float]:
    """Seconds per `add` call as a run makes it (registry tool, checks, pool, conversion)."""
    import json

    from django.contrib.auth import get_user_model

    from agents.registry import ToolContext, execute, get_tool

    user = get_user_model().objects.get_or_create(username="bench")[0]
    samples = []
    for index in range(calls + 20):
        started = time.perf_counter()
        result = execute(get_tool(key), ToolContext(user=user), json.dumps({"a": index, "b": 1}))
        if index >= 20:
            samples.append(time.perf_counter() - started)
        assert result.ok, result.error
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    options = parser.parse_args()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.conf import settings
    from mcp import StdioServerParameters

    from agents.mcp.client import sessions_close
    from agents.mcp.models import McpServer
    from agents.mcp.services import server_sync

    log = Path(tempfile.mkdtemp()) / "ledger.log"
    server = [sys.executable, "-m", "tests.mcp.server", "--log", str(log)]
    port = free_port()
    process = subprocess.Popen(
        [*server, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait(port)
        settings.MCP_STDIO_COMMANDS = {"bench": server}
        rows = {
            "http": McpServer.objects.create(
                name="b-http", display_name="b", transport="http", url=url
            ),
            "stdio": McpServer.objects.create(
                name="b-stdio", display_name="b", transport="stdio", command="bench"
            ),
        }
        targets = {"http": url, "stdio": StdioServerParameters(command=server[0], args=server[1:])}
        print(f"One MCP tool call (`add`), {options.calls} calls, ms (p50 / p90):")
        for transport, row in rows.items():
            server_sync(server=row)
            bare = percentiles(bare_samples(targets[transport], options.calls))
            ours = percentiles(platform_samples(f"mcp.{row.name}.add", options.calls))
            print(
                f"  {transport:5}  server {bare[0]:6.2f} / {bare[1]:6.2f}   "
                f"platform {ours[0]:6.2f} / {ours[1]:6.2f}   "
                f"overhead at p50 {ours[0] - bare[0]:+.2f}"
            )
        sessions_close()
    finally:
        process.kill()


def _wait(port: int) -> None:
    import socket

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the MCP server did not start")


if __name__ == "__main__":
    main()
