"""The demo's remote agent: a small A2A server (the official a2a-sdk) that converts Chinese
between 繁體 and 简体 offline (OpenCC), served at /demo/a2a/translator/ when DEMO_TRANSLATOR is
on (by default in development), so delegating to another platform's agent works without a key."""

from __future__ import annotations

import re
from typing import Any

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
from django.conf import settings
from starlette.applications import Starlette

from agents.demo import TRANSLATOR_PATH
from config.text import in_script

PATH = TRANSLATOR_PATH
CARD = ".well-known/agent-card.json"
ASGIApp = Any
_TO_SIMPLIFIED = re.compile(r"简体|簡體|simplified", re.IGNORECASE)
_TO_TRADITIONAL = re.compile(r"繁体|繁體|traditional", re.IGNORECASE)


_HAN = re.compile(r"[\u3400-\u9fff]")
_ASKING_WORDS = re.compile(
    r"翻譯|翻译|轉換|转换|簡體|简体|繁體|繁体|中文|請|请|幫我|帮我|一下|成|把|[\W_a-z0-9]",
    re.IGNORECASE,
)
QUESTION = "請給我要轉換的中文文字。/ Which Chinese text should I convert between 繁體 and 简体?"
WORKING = "正在轉換… / Converting…"  # its status message while it works


def translated(text: str, asked: str = "") -> str:
    """The text in the script it (or the task that `asked` for it) names, 简体 or 繁體, else in
    the other one than it is in."""
    wanted = f"{asked}\n{text}"
    if _TO_SIMPLIFIED.search(wanted):
        return in_script(text, "zh-hans")
    if _TO_TRADITIONAL.search(wanted):
        return in_script(text, "zh-hant")
    simple = in_script(text, "zh-hans")
    return in_script(text, "zh-hant") if simple == text else simple


def has_text_to_convert(text: str) -> bool:
    """Whether the task holds Chinese text besides the words asking for the conversion."""
    return bool(_HAN.search(_ASKING_WORDS.sub("", text)))


class Translator(AgentExecutor):
    """Answers a task with its text converted, in a few streamed chunks; a task with no Chinese
    text to convert asks for it (A2A's input-required), and the answer continues the task."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """File the task, stream the converted text, complete (or ask for the text)."""
        assert context.task_id and context.context_id and context.message  # (a new message)
        task, text = context.current_task, context.get_user_input()
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            first = "".join(p.text for p in task.history[0].parts if p.HasField("text"))
            await updater.start_work()
            await self._answer(updater, translated(text, asked=first))
            return
        if task is None:
            await event_queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
        await updater.start_work(updater.new_agent_message([Part(text=WORKING)]))
        if not has_text_to_convert(text):
            await updater.requires_input(updater.new_agent_message([Part(text=QUESTION)]))
            return
        await self._answer(updater, translated(text))

    async def _answer(self, updater: TaskUpdater, converted: str) -> None:
        """Stream the converted text in pieces, then complete the task."""
        answer = "[offline translator] " + converted
        pieces = re.findall(r".{1,12}", answer, re.DOTALL)
        for index, piece in enumerate(pieces):
            await updater.add_artifact(
                [Part(text=piece)], artifact_id="translation", append=index > 0
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing to stop: close the task."""
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def _card(url: str) -> AgentCard:
    """The translator's card, its endpoint at `url`."""
    return AgentCard(
        name="Translator (demo)",
        description="Converts Chinese between Traditional and Simplified script, offline.",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="script",
                name="繁簡轉換",
                description="Traditional ⇄ Simplified Chinese",
                tags=["translate", "翻譯", "翻译"],
            )
        ],
    )


def translator_mounted(app: ASGIApp) -> ASGIApp:
    """`app` with the demo translator at /demo/a2a/translator/ when DEMO_TRANSLATOR is on."""
    if not settings.DEMO_TRANSLATOR:
        return app
    handler = DefaultRequestHandler(
        agent_executor=Translator(),
        task_store=InMemoryTaskStore(),
        agent_card=_card(settings.DEMO_SITE_URL.rstrip("/") + PATH),
    )
    rpc = Starlette(routes=create_jsonrpc_routes(handler, rpc_url=PATH))

    async def route(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PATH):
            await app(scope, receive, send)
        elif scope["path"] == PATH + CARD:  # the endpoint on the host it was asked on
            (card,) = create_agent_card_routes(_card(_here(scope)), card_url=scope["path"])
            await card.handle(scope, receive, send)
        else:
            await rpc(scope, receive, send)

    return route


def _here(scope: dict[str, Any]) -> str:
    """This endpoint's URL on the host the request named."""
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1") or settings.DEMO_SITE_URL.split("//")[-1]
    return f"{scope.get('scheme', 'http')}://{host.rstrip('/')}{PATH}"
