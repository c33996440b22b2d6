"""Peer for bench/peers.py: the OpenAI Agents SDK running the same team, streamed, in its own
process (its import package is named `agents`, like our app, so it never shares an interpreter
with the platform).

The team: `entry` may call `hop1` as a tool (`Agent.as_tool`, the sub-agent streamed through
`on_stream`), `hop1` may call `hop2`; nothing is persisted. Reads one depth per line on stdin,
runs one turn at that depth against the fake server, and prints the turn's seconds.

Usage (by bench/peers.py): .venv-bench/bin/python -P bench/peer_sdk.py BASE_URL
"""

from __future__ import annotations

import asyncio
import sys
import time

from openai import AsyncOpenAI

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled


async def ignore(_event: object) -> None:
    """The sub-agent's streamed events: received, as a client would, and dropped."""


def team(base_url: str) -> Agent:
    """entry → hop1 → hop2, each on the fake server, each with the next as a streamed tool."""
    client = AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    model = OpenAIChatCompletionsModel(model="m", openai_client=client)
    below = None
    for name in ("hop2", "hop1", "entry"):
        tools = []
        if below is not None:
            tools = [
                below.as_tool(
                    tool_name=below.name, tool_description=f"Ask {below.name}.", on_stream=ignore
                )
            ]
        below = Agent(name=name, instructions=f"You are {name}.", model=model, tools=tools)
    return below


async def turn(entry: Agent, depth: int) -> float:
    """One streamed turn; its seconds."""
    started = time.perf_counter()
    result = Runner.run_streamed(entry, input=f"please go depth={depth}")
    async for _event in result.stream_events():
        pass
    return time.perf_counter() - started


async def main(base_url: str) -> None:
    """Serve turns from stdin until it closes."""
    set_tracing_disabled(True)  # no trace upload: nothing leaves the machine
    entry = team(base_url)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        seconds = await turn(entry, int(line))
        print(f"{seconds:.6f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
