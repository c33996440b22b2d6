"""Another platform's agent for tests: a small a2a-sdk server whose answers depend on the task's
words ("fail", "hang", "ask", "slow"; else it translates by echoing), served by daphne:
`daphne tests.a2a_peer:application`. PEER_LOG names a file it appends each cancel to."""

from __future__ import annotations

import asyncio
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
        await updater.start_work(updater.new_agent_message([Part(text="Translating…")]))
        if "fail" in text:
            await updater.failed(updater.new_agent_message([Part(text="The peer broke down.")]))
            return
        if "ask" in text:
            question = updater.new_agent_message([Part(text="Into which language?")])
            await updater.requires_input(question)
            return
        if "hang" in text:
            await asyncio.Event().wait()
        words = f"Translated: {text}".split(" ")
        pause = 0.3 if "slow" in text else 0.01
        for index, word in enumerate(words):
            await asyncio.sleep(pause)
            await updater.add_artifact(
                [Part(text=word + ("" if index == len(words) - 1 else " "))],
                artifact_id="answer",
                append=index > 0,
                last_chunk=False,
            )
        await updater.complete()

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
