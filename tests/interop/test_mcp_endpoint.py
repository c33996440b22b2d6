"""The MCP endpoint (/mcp/) with the real `mcp` client against a real server: tools per user,
answers with their session, progress while experts work, and nothing across users."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import Group
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agents.demo import TRANSLATOR_PATH, seed_demo_agents
from agents.models import Agent
from chat.interop.demo_translator import WORKING
from chat.interop.mcp_tools import Answer
from chat.models import ChatMessage, ChatSession
from chat.tokens import token_create
from tests.e2e.conftest import module_asgi_server, start_asgi_server  # noqa: F401  (servers)
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI, error

pytestmark = pytest.mark.django_db(transaction=True)

DELEGATING = "budget check: 1200*0.05?"  # the offline model: assistant → finance → math


@pytest.fixture
def url(module_asgi_server) -> str:  # noqa: F811
    """The module's daphne server on the test database; its base URL."""
    return module_asgi_server.url


@pytest.fixture
def tokens(db) -> dict[str, str]:
    """The demo team, its entry agent open to the Staff group only: alice and bob are in it,
    carol is not. Each has an API token (written before the server starts)."""
    seed_demo_agents()
    staff = Group.objects.create(name="Staff")
    Agent.objects.filter(is_entry=True).update(access_group=staff)
    raw = {}
    for name in ("alice", "bob", "carol"):
        user = make_user(name)
        if name != "carol":
            user.groups.add(staff)
        raw[name] = token_create(user=user, name="mcp")[1]
    return raw


def with_session(
    url: str, token: str, work: Callable[[ClientSession], Awaitable[Any]], language: str = "en"
) -> Any:
    """`work(session)` on an initialized MCP client session to the endpoint as the token's user,
    reading `language`."""

    async def connected() -> Any:
        headers = {"Authorization": f"Bearer {token}", "Accept-Language": language}
        timeout = httpx2.Timeout(10, read=60)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            streamable_http_client(url + "/mcp/", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await work(session)

    return asyncio.run(connected())


def ask(url: str, token: str, arguments: dict[str, Any], notes: list[str] | None = None) -> Any:
    """Call the entry agent's tool once; progress messages go to `notes`."""

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if notes is not None:
            notes.append(message or "")

    async def call(session: ClientSession) -> Any:
        return await session.call_tool("ask_assistant", arguments, progress_callback=progress)

    return with_session(url, token, call)


def tool_names(url: str, token: str) -> list[str]:
    """The tools the token's user is offered."""

    async def names(session: ClientSession) -> list[str]:
        return [tool.name for tool in (await session.list_tools()).tools]

    return with_session(url, token, names)


def test_the_entry_agent_is_a_tool_only_for_users_who_may_use_it(url, tokens):
    async def listing(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    [tool] = with_session(url, tokens["alice"], listing)
    assert tool.name == "ask_assistant" and tool.title == "Assistant"
    assert "Finance expert: Budgets, costs, prices" in tool.description
    assert tool.input_schema["required"] == ["question"]
    assert set(tool.input_schema["properties"]) == {"question", "session_id"}
    assert tool_names(url, tokens["carol"]) == []
    [chinese] = with_session(url, tokens["alice"], listing, language="zh-TW,zh;q=0.9")
    assert chinese.name == "ask_assistant" and chinese.title == "助理"
    assert "財務專家" in chinese.description


def test_the_newer_protocol_client_sees_the_same_tool(url, tokens):
    async def names() -> list[str]:
        headers = {"Authorization": f"Bearer {tokens['alice']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=20) as http:
            transport = streamable_http_client(url + "/mcp", http_client=http)
            async with Client(transport, mode="auto") as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    assert asyncio.run(names()) == ["ask_assistant"]


def test_an_answer_comes_with_progress_and_its_session_continues(url, tokens):
    notes: list[str] = []
    first = ask(url, tokens["alice"], {"question": DELEGATING}, notes)
    assert not first.is_error
    assert "1200*0.05 = 60" in first.content[0].text
    session_id = first.structured_content["session_id"]
    assert first.content[0].text.endswith(f"session_id: {session_id}")
    assert first.structured_content["status"] == "succeeded"
    assert notes == ["Asking Finance expert…", "Asking Math expert…"]
    session = ChatSession.objects.get(pk=session_id)
    assert session.user.username == "alice"

    again = ask(url, tokens["alice"], {"question": "what is 2+3?", "session_id": session_id})
    assert not again.is_error and "5" in again.structured_content["answer"]
    assert again.structured_content["session_id"] == session_id
    asked = ChatMessage.objects.filter(session_id=session_id, role="user")
    assert sorted(asked.values_list("content", flat=True)) == [DELEGATING, "what is 2+3?"]
    assert ChatSession.objects.count() == 1


def test_a_remote_experts_own_status_is_a_progress_notification(url, tokens):
    Agent.objects.filter(name="translator").update(base_url=url + TRANSLATOR_PATH)
    notes: list[str] = []
    answer = ask(url, tokens["alice"], {"question": "請翻譯成簡體：會議在下週一"}, notes)
    assert not answer.is_error and "会议在下周一" in answer.structured_content["answer"]
    assert notes == ["正在詢問 翻譯員…", f"翻譯員: {WORKING}"]


def test_another_users_session_cannot_be_continued_or_seen(url, tokens):
    alice = ask(url, tokens["alice"], {"question": DELEGATING})
    session_id = alice.structured_content["session_id"]

    bobs = ask(url, tokens["bob"], {"question": "and 2+3?", "session_id": session_id})
    assert bobs.is_error
    assert bobs.content[0].text == "No such session."
    assert "1200" not in str(bobs.model_dump())
    assert not ChatSession.objects.filter(user__username="bob").exists()
    assert ChatMessage.objects.filter(session_id=session_id, role="user").count() == 1
    # an unknown id is answered alike, and starts nothing
    unknown = {"question": "hi", "session_id": str(uuid.uuid4())}
    assert ask(url, tokens["bob"], unknown).content[0].text == "No such session."
    assert ChatSession.objects.count() == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "The argument “question” (text) is required."),
        ({"question": 42}, "The argument “question” (text) is required."),
        ({"question": "   "}, "The message is empty."),
        ({"question": "x" * 32001}, "The message is 32001 characters; the limit is 32000."),
        ({"question": "hi", "session_id": "not-a-uuid"}, "“session_id” must be a UUID"),
        ({"question": "hi", "colour": "red"}, "Unknown arguments: colour."),
    ],
)
def test_invalid_arguments_are_a_clear_tool_error_and_store_nothing(
    url, tokens, arguments, message
):
    result = ask(url, tokens["alice"], arguments)
    assert result.is_error and result.content[0].text.startswith(message)
    assert ChatSession.objects.count() == 0 and ChatMessage.objects.count() == 0


def test_an_unknown_tool_is_a_protocol_error(url, tokens):
    async def refusal(session: ClientSession) -> str:
        with pytest.raises(MCPError) as refused:
            await session.call_tool("ask_finance", {"question": "hi"})
        return refused.value.message

    assert with_session(url, tokens["alice"], refusal) == "Unknown tool: ask_finance."
    assert ChatSession.objects.count() == 0


def test_a_user_who_may_not_use_the_agent_cannot_call_it(url, tokens):
    result = ask(url, tokens["carol"], {"question": "what is 2+3?"})
    assert result.is_error and result.content[0].text == "You may not use Assistant."
    assert ChatSession.objects.count() == 0


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        (None, "not_authenticated"),
        ("Bearer ap_wrong", "authentication_failed"),
        ("Basic YWxpY2U6cHc=", "not_authenticated"),
    ],
)
@pytest.mark.parametrize("path", ["/mcp/", "/mcp"])
def test_a_missing_or_bad_token_is_refused_with_401(url, tokens, authorization, code, path):
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask_assistant", "arguments": {"question": "what is 2+3?"}},
    }
    response = httpx2.post(url + path, json=body, headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == code
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert ChatSession.objects.count() == 0


@pytest.fixture
def failing_model(db) -> Iterator[tuple[FakeOpenAI, str]]:
    """An entry agent on a model service that answers 500, and dave's token."""
    make_agent("assistant", display_name="Assistant", is_entry=True, provider="openai")
    server = FakeOpenAI().start()
    server.script(error(500))
    try:
        yield server, token_create(user=make_user("dave"), name="mcp")[1]
    finally:
        server.stop()


def test_a_failed_turn_is_a_tool_error_with_its_plain_message(
    start_asgi_server,  # noqa: F811
    failing_model,
):
    fake, token = failing_model
    server = start_asgi_server(
        OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="test-key", OPENAI_MAX_RETRIES="0"
    )
    result = ask(server.url, token, {"question": "hello"})
    assert result.is_error
    text = result.content[0].text
    assert "scripted failure" not in text  # the upstream error stays with the admins
    session_id = result.structured_content["session_id"]
    assert text.endswith(f"session_id: {session_id}")
    assert ChatSession.objects.get(pk=session_id).user.username == "dave"


@pytest.fixture
def approval_needed(db) -> str:
    """assistant → tasks, whose data-changing tools need the Planners group's approval; erin's
    token."""
    tasks = make_agent(
        "tasks",
        display_name="Task expert",
        tags=["task"],
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )
    make_agent("assistant", display_name="Assistant", is_entry=True, subagents=[tasks])
    return token_create(user=make_user("erin"), name="mcp")[1]


def test_a_turn_waiting_for_a_person_says_so_with_its_session(url, approval_needed):
    notes: list[str] = []
    result = ask(url, approval_needed, {"question": "add a task: buy milk"}, notes)
    assert not result.is_error and result.structured_content["status"] == "waiting"
    assert "the Planners team" in result.content[0].text
    assert notes == ["Asking Task expert…"]
    assert ChatSession.objects.filter(pk=result.structured_content["session_id"]).exists()


def test_an_answers_citations_are_listed_as_sources():
    answer = Answer(uuid.UUID(int=1))
    answer.read(
        {
            "type": "message.completed",
            "agent": {"depth": 0},
            "data": {
                "text": "Sick leave needs a note [1].",
                "citations": [{"ref": 1, "title": "Leave policy"}],
            },
        }
    )
    answer.read({"type": "run.completed", "agent": {"depth": 0}, "data": {"status": "succeeded"}})
    text = answer.result().content[0].text
    assert text == (
        "Sick leave needs a note [1].\n\nSources:\n[1] Leave policy\n\n"
        "session_id: 00000000-0000-0000-0000-000000000001"
    )


def test_past_the_send_rate_a_call_is_a_tool_error_and_starts_nothing(start_asgi_server, tokens):  # noqa: F811
    server = start_asgi_server(API_THROTTLE_SEND="1/minute")
    first = ask(server.url, tokens["alice"], {"question": "2+2?"})
    assert not first.is_error
    second = ask(server.url, tokens["alice"], {"question": "3+3?"})
    assert second.is_error and "Too many messages" in second.content[0].text
    assert ChatMessage.objects.filter(role="user").count() == 1
