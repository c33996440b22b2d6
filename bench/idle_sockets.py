"""Benchmark: what idle sockets cost the web process on the distributed stack, with each
socket's relay probe (chat/relay.py, every RELAY_PROBE_SECONDS) and with it out of the way.

Opens N websockets that join nothing and stay quiet, lets them idle, and reads the daphne
process's CPU time over the idle spell (from /proc). Prints CPU as % of one core, and per 100
sockets.

Usage: .venv/bin/python bench/idle_sockets.py [--sockets 200] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from harness import SESSION, Servers, base_env, distributed_env, manage, shell

from tests.fake_openai import FakeOpenAI

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def idle(port: int, session_key: str, sockets: int, seconds: float, pid: int) -> float:
    """Open the sockets, let them settle, and measure the server's CPU over `seconds`."""
    import websockets

    headers = {"Cookie": f"sessionid={session_key}", "Origin": f"http://127.0.0.1:{port}"}
    url = f"ws://127.0.0.1:{port}/ws/chat/"
    opened = [
        await websockets.connect(url, additional_headers=headers, ping_interval=None)
        for _ in range(sockets)
    ]
    await asyncio.sleep(2)  # connection work done
    before, started = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    used = (cpu_seconds(pid) - before) / (time.monotonic() - started)
    closed = sum(1 for ws in opened if ws.close_code is not None)
    for ws in opened:
        await ws.close()
    if closed:
        raise RuntimeError(f"{closed} sockets were closed while idle")
    return used * 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    fake = FakeOpenAI().start()
    rows = []
    try:
        env = distributed_env(base_env(fake.base_url))
        manage(env, "migrate", "--no-input")
        session_key = shell(env, SESSION)
        for label, probe in (
            ("probe every 30 s (default)", "30"),
            ("probe every 10 s", "10"),
            ("no probe (1 h)", "3600"),
        ):
            with Servers({**env, "RELAY_PROBE_SECONDS": probe}, with_worker=False) as servers:
                pid = servers.processes[0].pid
                cpu = asyncio.run(idle(servers.port, session_key, args.sockets, args.seconds, pid))
            rows.append((label, cpu))
    finally:
        fake.stop()
    print(f"\n{args.sockets} idle sockets for {args.seconds:.0f} s, daphne (distributed stack)")
    print(f"{'relay probe':40} {'CPU % of a core':>16} {'per 100 sockets':>16}")
    for label, cpu in rows:
        print(f"{label:40} {cpu:16.2f} {cpu * 100 / args.sockets:16.2f}")


if __name__ == "__main__":
    main()
