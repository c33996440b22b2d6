"""The A2A agent executor: a started turn's events as task status updates and answer chunks."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part
from a2a.utils.errors import InvalidRequestError
from channels.db import database_sync_to_async

from chat.interop.a2a_start import TURN_KEY
from chat.interop.a2a_tasks import ANSWER_ARTIFACT, caller_of, task_cancel
from chat.interop.openai_answer import Answer
from chat.interop.turn_stream import TurnStream
from chat.sse import STREAM_BROKEN

logger = logging.getLogger(__name__)
EXPERT_EVENTS = ("delegation.started", "delegation.completed")


@dataclass
class Relay:
    """One task's translation: the answer so far, the last chunk held back (sent when the next
    comes; the end sends the whole answer instead), and the experts' names by run id."""

    updater: TaskUpdater
    answer: Answer = field(default_factory=Answer)
    held: str = ""
    chunks: int = 0
    experts: dict[str, str] = field(default_factory=dict)

    async def take(self, event: dict[str, Any]) -> bool:
        """Send what the event means for the task; True once the task's stream ends."""
        kind, data = event.get("type"), event.get("data") or {}
        agent = event.get("agent") or {}
        if kind in EXPERT_EVENTS:
            await self.expert_note(data, agent)
            return False
        if kind == "run.progress" and data.get("text"):  # a remote expert's own status
            await self.status(str(data["text"]), agent.get("display_name") or agent.get("name"))
            return False
        if kind == "message.completed" and agent.get("depth", 0) > 0 and data.get("text"):
            await self.status(str(data["text"]), agent.get("display_name") or agent.get("name"))
            return False
        piece = self.answer.take(event)
        if kind == "run.waiting":
            await self.flush()
            await self.updater.requires_input(self.message(piece.strip(), None, data))
            return True
        if kind == "run.completed" and agent.get("depth") == 0:
            await self.finish(piece)
            return True
        if piece:
            await self.flush()
            self.held = piece
        return False

    async def expert_note(self, data: dict[str, Any], agent: dict[str, Any]) -> None:
        """An expert was asked or answered: a working status tagged with its name."""
        expert = str(data.get("run_id") or "")
        if data.get("display_name"):
            self.experts[expert] = str(data["display_name"])
        name = self.experts.get(expert) or str(data.get("target") or agent.get("display_name"))
        await self.status(str(data.get("summary") or ""), name)

    async def status(self, text: str, expert: str | None) -> None:
        """A working status whose message is tagged with the expert's display name."""
        await self.updater.start_work(self.message(text, expert))

    def message(self, text: str, expert: str | None, extra: dict[str, Any] | None = None) -> Any:
        metadata: dict[str, Any] = {"expert": expert} if expert else {}
        if extra:
            metadata["waiting_for"] = extra.get("waiting_for") or ""
            metadata["item_id"] = str(extra.get("item_id") or "")
        return self.updater.new_agent_message([Part(text=text)], metadata=metadata or None)

    async def flush(self) -> None:
        """Send the chunk held back (the answer's first chunk starts the artifact)."""
        if not self.held:
            return
        await self.updater.add_artifact(
            [Part(text=self.held)],
            artifact_id=ANSWER_ARTIFACT,
            name="answer",
            append=self.chunks > 0,
            last_chunk=False,
        )
        self.held, self.chunks = "", self.chunks + 1

    async def finish(self, error_text: str) -> None:
        """The entry agent's run ended: the whole answer in one part, replacing the chunks (a
        task read later holds one text, not one part per chunk), then the task's final state."""
        if self.answer.text:
            await self.updater.add_artifact(
                [Part(text=self.answer.text)],
                artifact_id=ANSWER_ARTIFACT,
                name="answer",
                append=False,
                last_chunk=True,
            )
        status = self.answer.status
        if status == "succeeded":
            await self.updater.complete()
        elif status == "cancelled":
            await self.updater.cancel()
        else:
            message = (self.answer.error or {}).get("message") or error_text
            await self.updater.failed(self.message(message or status, None))


class TurnExecutor(AgentExecutor):
    """Follows the turn the request context's builder started until it ends or waits for a
    person (input-required; the turn goes on and `tasks/get` shows it later)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Relay the started turn's events to the task."""
        turn = context.call_context.state.get(TURN_KEY) if context.call_context else None
        if not isinstance(turn, TurnStream):
            raise InvalidRequestError(message="This task takes no further messages.")
        assert context.task_id and context.context_id  # (set by the builder)
        relay = Relay(TaskUpdater(event_queue, context.task_id, context.context_id))
        try:
            await relay.updater.start_work()
            async for event in turn.events():
                if event is not None and await relay.take(event):
                    return
        except STREAM_BROKEN:
            logger.warning("A2A: the channel layer failed during run %s", turn.run_id)
            await relay.status("The live event stream broke; the turn goes on and is saved.", None)
        finally:
            await turn.close()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the turn as the page's stop does (the SDK then closes the task as canceled)."""
        assert context.call_context and context.task_id
        user = caller_of(context.call_context)
        await database_sync_to_async(task_cancel)(user=user, task_id=context.task_id)
