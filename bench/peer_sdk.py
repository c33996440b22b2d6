"""Peer for bench/peers.py: the OpenAI Agents SDK running the same team, streamed, in its own
process (its import package is named `agents`, like our app, so it never shares an interpreter
with the platform).

The team: `entry` may call `hop1` as a tool (`Agent.as_tool`, the sub-agent streamed through
`on_stream`), `hop1` may call `hop2`; nothing is persisted. Reads one depth per line on stdin,
runs one turn at that depth against the fake server, and prints the turn's seconds and the
seconds to its first word of text (from any agent of the team).

Usage (by bench/peers.py): .venv-bench/bin/python -P bench/peer_sdk.py BASE_URL
       python -S -P bench/peer_sdk.py BASE_URL SITE_PACKAGES   (the SDK installed beside our
       app: site-packages is added by hand, so the app's editable `agents` is never found)
"""

from __future__ import annotations

import asyncio
import sys
import time

if len(sys.argv) > 2:
    sys.path.append(sys.argv[2])

from openai import AsyncOpenAI  # noqa: E402

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402


class FirstText:
    """When the first word of text of the turn arrived (perf_counter seconds)."""

    at: float | None = None

    def see(self, event: object) -> None:
        """Note a streamed event: text deltas are `response.output_text.delta`."""
        data = getattr(event, "data", None)
        if self.at is None and getattr(data, "type", "") == "response.output_text.delta":
            self.at = time.perf_counter()


FIRST = FirstText()


async def seen(event: dict) -> None:
    """A sub-agent's streamed event: received, as a client would, its first text noted."""
    FIRST.see(event["event"])


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
                    tool_name=below.name, tool_description=f"Ask {below.name}.", on_stream=seen
                )
            ]
        below = Agent(name=name, instructions=f"You are {name}.", model=model, tools=tools)
    return below


async def turn(entry: Agent, depth: int) -> tuple[float, float]:
    """One streamed turn; its seconds and the seconds to its first text."""
    FIRST.at = None
    started = time.perf_counter()
    result = Runner.run_streamed(entry, input=f"please go depth={depth}")
    async for event in result.stream_events():
        FIRST.see(event)
    ended = time.perf_counter()
    return ended - started, (FIRST.at or ended) - started


async def main(base_url: str) -> None:
    """Serve turns from stdin until it closes."""
    set_tracing_disabled(True)  # no trace upload: nothing leaves the machine
    entry = team(base_url)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        seconds, first = await turn(entry, int(line))
        print(f"{seconds:.6f} {first:.6f}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
