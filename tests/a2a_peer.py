"""Another platform's agent for tests: a small a2a-sdk server whose answers depend on the task's
words ("fail", "hang", "ask", "twice", "login", "slow", "forever"; else it translates by
echoing, and reports its usage), served by daphne: `daphne tests.a2a_peer:application`. An
answer to its question continues the same task. PEER_LOG names a file it appends each cancel,
each message's agent_platform_hops and each X-Peer-Key header to."""

from __future__ import annotations

import asyncio
import itertools
import os

from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Role,
    TaskState,
)
from starlette.applications import Starlette

URL = os.environ.get("PEER_URL", "http://127.0.0.1/")


class Peer(AgentExecutor):
    """Answers as the words of the task ask."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stream, fail, hang, or ask for input."""
        assert context.task_id and context.context_id and context.message  # (a new message)
        if context.current_task is None:  # a task is filed before any of its updates
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input()
        key = context.call_context.state.get("headers", {}).get("x-peer-key")
        if os.environ.get("PEER_LOG"):
            hops = context.message.metadata["agent_platform_hops"]
            with open(os.environ["PEER_LOG"], "a") as log:
                log.write(f"hops {int(hops)} {text}\n" + (f"key {key}\n" if key else ""))
        task = context.current_task
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # The answer to its question: translate the task's first words into it ("twice":
            # after asking a second question).
            said = [m for m in task.history if m.role == Role.ROLE_USER]
            words = ["".join(p.text for p in m.parts if p.HasField("text")) for m in said]
            if said[-1].message_id != context.message.message_id:  # (not in it yet)
                words.append(text)
            if "twice" in words[0] and len(words) == 2:
                question = updater.new_agent_message([Part(text="Formal or casual?")])
                await updater.requires_input(question)
                return
            await self._translate(updater, f"Translated into {', '.join(words[1:])}: {words[0]}")
            return
        await updater.start_work(updater.new_agent_message([Part(text="Translating…")]))
        if "fail" in text:
            await updater.failed(updater.new_agent_message([Part(text="The peer broke down.")]))
            return
        if "ask" in text:
            question = updater.new_agent_message([Part(text="Into which language?")])
            await updater.requires_input(question)
            return
        if "login" in text:
            await updater.requires_auth(updater.new_agent_message([Part(text="Sign in first.")]))
            return
        if "hang" in text:
            await asyncio.Event().wait()
        if "forever" in text:
            for index in itertools.count():
                await asyncio.sleep(0.05)
                part = Part(text="more ")
                await updater.add_artifact([part], artifact_id="answer", append=index > 0)
        await self._translate(updater, f"Translated: {text}", pause=0.3 if "slow" in text else 0.01)

    async def _translate(self, updater: TaskUpdater, answer: str, pause: float = 0.01) -> None:
        """Stream the answer word by word, then complete with the usage it reports."""
        words = answer.split(" ")
        for index, word in enumerate(words):
            await asyncio.sleep(pause)
            await updater.add_artifact(
                [Part(text=word + ("" if index == len(words) - 1 else " "))],
                artifact_id="answer",
                append=index > 0,
                last_chunk=False,
            )
        usage = {"usage": {"input_tokens": 11, "output_tokens": len(words)}}
        await updater.update_status(TaskState.TASK_STATE_COMPLETED, metadata=usage)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Record the cancel, then close the task."""
        assert context.task_id and context.context_id
        if os.environ.get("PEER_LOG"):
            with open(os.environ["PEER_LOG"], "a") as log:
                log.write(f"cancel {context.task_id}\n")
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


CARD = AgentCard(
    name="Translator",
    description="Translates between English and Chinese (a test peer).",
    version="1",
    supported_interfaces=[
        AgentInterface(url=URL, protocol_binding="JSONRPC", protocol_version="1.0")
    ],
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="translate", name="translate", description="Translate", tags=["text"])],
)
HANDLER = DefaultRequestHandler(
    agent_executor=Peer(), task_store=InMemoryTaskStore(), agent_card=CARD
)
application = Starlette(
    routes=[*create_agent_card_routes(CARD), *create_jsonrpc_routes(HANDLER, rpc_url="/")]
)
