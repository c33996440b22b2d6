"""The A2A door at /a2a/<agent>/: the public card, and JSON-RPC for API-token callers."""

from __future__ import annotations

import io
import json
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
)
from channels.db import database_sync_to_async
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.utils import translation
from rest_framework import exceptions
from starlette.applications import Starlette
from starlette.requests import Request

from agents.models import Agent
from chat.interop.a2a_card import a2a_agent, agent_card, handler_card
from chat.interop.a2a_executor import TurnExecutor
from chat.interop.a2a_start import LANGUAGE_KEY, TurnStarter
from chat.interop.a2a_tasks import PlatformUser, RunTaskStore
from chat.tokens import ApiTokenAuthentication

PREFIX = "/a2a/"
CARD_PATH = ".well-known/agent-card.json"
ASGIApp = Any
CALLER_KEY = "agent_platform.a2a_caller"  # the ASGI scope's authenticated (user, language)
PARKED_SECONDS = 300  # a task waiting for a person leaves memory then (its runs stay the truth)


def a2a_mounted(app: ASGIApp) -> ASGIApp:
    """`app` with /a2a/… answered by the A2A door instead."""

    async def route(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            await DOOR(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route


class CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context for a caller the door authenticated: the user and language (and
    the headers the SDK reads, such as A2A-Version, without the token)."""

    def build(self, request: Request) -> ServerCallContext:
        """As the SDK's, for the platform user the API token belongs to."""
        context = super().build(request)
        context.state["headers"].pop("authorization", None)
        context.state[LANGUAGE_KEY] = request.scope[CALLER_KEY][1]
        return context

    def build_user(self, request: Request) -> PlatformUser:
        """The user the API token belongs to (tasks are theirs alone)."""
        return PlatformUser(request.scope[CALLER_KEY][0])


class Door:
    """Finds the agent in the path (404 unless open to A2A), serves its card to anyone, and
    JSON-RPC to API-token callers (401 otherwise) through the SDK's routes."""

    def __init__(self) -> None:
        self.store = RunTaskStore()
        self.rpc: Starlette | None = None  # made in the serving event loop, on first use

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        name, _slash, rest = scope["path"][len(PREFIX) :].partition("/")
        agent = await database_sync_to_async(a2a_agent)(name=name)
        request = ASGIRequest(scope, io.BytesIO())  # headers only: the SDK reads the body
        if agent is None or not _slash:
            return await _refuse(send, 404, "not_found", "There is no such agent here.")
        if rest == CARD_PATH:
            return await self.card(agent, request, scope, receive, send)
        if rest:
            return await _refuse(
                send, 404, "not_found", "Nothing here: POST JSON-RPC to the agent."
            )
        try:
            found = await database_sync_to_async(ApiTokenAuthentication().authenticate)(request)
        except exceptions.AuthenticationFailed as exc:
            return await _refuse(send, 401, "authentication_failed", str(exc.detail))
        if found is None:
            message = "Send 'Authorization: Bearer <token>' with an API token."
            return await _refuse(send, 401, "not_authenticated", message)
        language = translation.get_language_from_request(request)
        await self.app()({**scope, CALLER_KEY: (found[0], language)}, receive, send)

    async def card(
        self, agent: Agent, request: ASGIRequest, scope: dict[str, Any], receive: Any, send: Any
    ) -> None:
        """The agent's card, served by the SDK's card route (ETag, 304)."""
        try:
            url = request.build_absolute_uri(f"{PREFIX}{agent.name}/")
        except DisallowedHost:
            return await _refuse(send, 400, "bad_request", "This host is not served.")
        card = await database_sync_to_async(agent_card)(agent=agent, url=url)
        (route,) = create_agent_card_routes(card, card_url=scope["path"])
        await route.handle(scope, receive, send)

    def app(self) -> Starlette:
        """The SDK's JSON-RPC routes (v1.0 and v0.3 method names) for every open agent."""
        if self.rpc is None:
            handler = DefaultRequestHandler(
                agent_executor=TurnExecutor(),
                task_store=self.store,
                agent_card=handler_card(),
                request_context_builder=TurnStarter(self.store),
                interrupted_task_timeout=PARKED_SECONDS,
            )
            routes = create_jsonrpc_routes(
                handler,
                rpc_url=PREFIX + "{agent}/",
                context_builder=CallerContext(),
                enable_v0_3_compat=True,
            )
            self.rpc = Starlette(routes=routes)
        return self.rpc


async def _refuse(send: Any, status: int, code: str, message: str) -> None:
    """An HTTP error with the API's error body (401s name the bearer scheme)."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="a2a"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


DOOR = Door()
