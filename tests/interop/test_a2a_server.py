"""The A2A server (/a2a/<agent>/) with the official `a2a-sdk` client against a real daphne: the
public card, tasks that are our turns, streaming, cancelling, and nothing across users."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

from agents.demo import TRANSLATOR_PATH, seed_demo_agents
from agents.models import Agent
from chat.interop.demo_translator import WORKING
from chat.models import ChatMessage, ChatSession
from chat.tokens import token_create
from delegation.models import Run
from tests.e2e.conftest import module_asgi_server, start_asgi_server  # noqa: F401  (servers)
from tests.factories import make_user
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

DELEGATING = "budget check: what is 1200*0.05?"  # the offline model: assistant → finance → math
COMPLETED, CANCELED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED


@pytest.fixture
def tokens(db) -> dict[str, str]:
    """The demo team (its entry agent open to A2A); alice and bob with API tokens."""
    seed_demo_agents()
    return {name: token_create(user=make_user(name), name="a2a")[1] for name in ("alice", "bob")}


@pytest.fixture
def url(module_asgi_server, tokens) -> str:  # noqa: F811
    """The A2A endpoint of the demo's entry agent on the module's daphne server."""
    return module_asgi_server.url + "/a2a/assistant"


def as_user(
    url: str, token: str, work: Callable[[Client], Awaitable[Any]], *, streaming: bool = False
) -> Any:
    """`work(client)` with the SDK's client for the agent's card, as the token's user."""

    async def connected() -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            config = ClientConfig(httpx_client=http, streaming=streaming)
            async with ClientFactory(config).create(card) as client:
                return await work(client)

    return asyncio.run(connected())


def message(text: str, context_id: str = "", hops: int = 0) -> SendMessageRequest:
    """A user's text message, in the context given (none: a new one), that came through `hops`
    agent platforms."""
    sent = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if context_id:
        sent.context_id = context_id
    if hops:
        sent.metadata.update({"agent_platform_hops": hops})
    return SendMessageRequest(message=sent)


def send(url: str, token: str, text: str, context_id: str = "", hops: int = 0) -> Task:
    """message/send, waiting for the answer: the task."""

    async def sending(client: Client) -> Task:
        [response] = [r async for r in client.send_message(message(text, context_id, hops))]
        return response.task

    return as_user(url, token, sending)


def stream(url: str, token: str, text: str) -> list[StreamResponse]:
    """message/stream: every event until the stream ends."""

    async def streaming(client: Client) -> list[StreamResponse]:
        return [event async for event in client.send_message(message(text))]

    return as_user(url, token, streaming, streaming=True)


def get(url: str, token: str, task_id: str) -> Task:
    """tasks/get."""

    async def getting(client: Client) -> Task:
        return await client.get_task(GetTaskRequest(id=task_id))

    return as_user(url, token, getting)


def cancel(url: str, token: str, task_id: str) -> Task:
    """tasks/cancel."""

    async def cancelling(client: Client) -> Task:
        return await client.cancel_task(CancelTaskRequest(id=task_id))

    return as_user(url, token, cancelling)


def answer_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


def test_the_card_is_public_and_names_the_agent_its_experts_and_the_token_scheme(url):
    card = httpx.get(url + "/.well-known/agent-card.json", timeout=10)
    assert card.status_code == 200
    body = card.json()
    assert body["name"] == "Assistant"
    assert body["supportedInterfaces"][0]["url"] == url + "/"
    assert body["capabilities"]["streaming"] is True
    skills = {skill["id"]: skill for skill in body["skills"]}
    assert skills["finance"]["name"] == "Finance expert"
    assert skills["finance"]["description"] == Agent.objects.get(name="finance").description
    assert body["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    languages = body["capabilities"]["extensions"][0]["params"]["languages"]
    assert languages == ["en", "zh-hant", "zh-hans"]


def test_only_agents_open_to_a2a_have_a_card(url):
    Agent.objects.filter(name="assistant").update(a2a_enabled=False)
    assert httpx.get(url + "/.well-known/agent-card.json", timeout=10).status_code == 404
    finance = url.replace("/assistant", "/finance")  # an expert, not the entry agent
    assert httpx.get(finance + "/.well-known/agent-card.json", timeout=10).status_code == 404


def test_message_send_waits_for_the_answer_of_the_turn(url, tokens):
    task = send(url, tokens["alice"], DELEGATING)
    assert task.status.state == COMPLETED
    assert "60" in answer_of(task)
    assert [len(a.parts) for a in task.artifacts] == [1]  # the whole answer, not its chunks
    root = Run.objects.get(parent__isnull=True)
    assert task.id == str(root.id) and task.context_id == str(root.session_id)
    assert root.session.user.username == "alice" and root.status == "succeeded"
    again = get(url, tokens["alice"], task.id)
    assert again.status.state == COMPLETED and "60" in answer_of(again)
    assert again.history[0].parts[0].text == DELEGATING


def test_the_answer_comes_in_the_language_of_the_message(url, tokens):
    task = send(url, tokens["alice"], "請問 2+2 等於多少？")
    assert task.status.state == COMPLETED
    assert "4" in answer_of(task) and any("\u4e00" <= c <= "\u9fff" for c in answer_of(task))


def test_message_stream_shows_the_experts_then_the_answer_in_chunks(url, tokens):
    events = stream(url, tokens["alice"], DELEGATING)
    statuses = [e.status_update for e in events if e.HasField("status_update")]
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    experts = {s.status.message.metadata["expert"] for s in statuses if s.status.message.metadata}
    assert "Finance expert" in experts
    assert any(
        "Finance" in s.status.message.parts[0].text for s in statuses if s.status.message.parts
    )
    assert len(chunks) > 2 and not chunks[0].append and all(c.append for c in chunks[1:-1])
    streamed = "".join(part.text for chunk in chunks[:-1] for part in chunk.artifact.parts)
    # The end replaces the chunks with the whole answer in one part (`append` false).
    last = chunks[-1]
    assert last.last_chunk and not last.append and len(last.artifact.parts) == 1
    whole = last.artifact.parts[0].text
    assert "60" in whole and whole.startswith(streamed)
    assert statuses[-1].status.state == COMPLETED
    assert all(s.status.state == TaskState.TASK_STATE_WORKING for s in statuses[:-1])


def test_a_remote_experts_own_status_goes_on_tagged_with_its_name(
    url,
    tokens,
    module_asgi_server,  # noqa: F811
):
    """Two hops: a client asks our assistant over A2A; it asks the demo's remote translator
    over A2A, whose status message the client sees as the expert's."""
    Agent.objects.filter(name="translator").update(
        base_url=module_asgi_server.url + TRANSLATOR_PATH
    )
    events = stream(url, tokens["alice"], "請翻譯成簡體：會議在下週一")
    said = [
        (s.status.message.metadata["expert"], s.status.message.parts[0].text)
        for s in (e.status_update for e in events if e.HasField("status_update"))
        if s.status.message.metadata and s.status.message.parts
    ]
    assert ("翻譯員", WORKING) in said
    assert "会议在下周一" in answer_of(as_task(events))


def as_task(events: list[StreamResponse]) -> Task:
    """The answer's last chunk as a task's artifacts (for answer_of)."""
    last = [e.artifact_update for e in events if e.HasField("artifact_update")][-1]
    return Task(artifacts=[last.artifact])


def test_a_second_message_in_the_context_continues_the_same_session(url, tokens):
    first = send(url, tokens["alice"], "what is 2+2?")
    second = send(url, tokens["alice"], "what is 3+3?", context_id=first.context_id)
    assert second.context_id == first.context_id and second.id != first.id
    session = ChatSession.objects.get()
    assert str(session.id) == first.context_id
    assert ChatMessage.objects.filter(session=session, role="user").count() == 2


def test_a_context_named_by_the_client_is_the_users_own(url, tokens):
    mine = send(url, tokens["alice"], "what is 2+2?", context_id="planning")
    theirs = send(url, tokens["bob"], "what is 3+3?", context_id="planning")
    assert mine.context_id != theirs.context_id
    again = send(url, tokens["alice"], "what is 4+4?", context_id="planning")
    assert again.context_id == mine.context_id
    assert ChatSession.objects.get(pk=mine.context_id).user.username == "alice"


def test_tasks_cancel_stops_a_running_turn(start_asgi_server, tokens):  # noqa: F811
    url = start_asgi_server(OFFLINE_MODEL_DELAY_MS="200").url + "/a2a/assistant"

    async def start_then_cancel(client: Client) -> tuple[Task, Task]:
        request = message(DELEGATING)
        request.configuration.return_immediately = True
        [started] = [r.task async for r in client.send_message(request)]
        return started, await client.cancel_task(CancelTaskRequest(id=started.id))

    started, cancelled = as_user(url, tokens["alice"], start_then_cancel)
    assert started.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    assert cancelled.status.state == CANCELED
    assert Run.objects.get(pk=started.id).status == "cancelled"
    assert get(url, tokens["alice"], started.id).status.state == CANCELED


def test_another_user_cannot_get_cancel_or_continue_a_task(start_asgi_server, tokens):  # noqa: F811
    url = start_asgi_server(OFFLINE_MODEL_DELAY_MS="200").url + "/a2a/assistant"

    async def start(client: Client) -> Task:
        request = message(DELEGATING)
        request.configuration.return_immediately = True
        return [r.task async for r in client.send_message(request)][0]

    task = as_user(url, tokens["alice"], start)
    with pytest.raises(TaskNotFoundError):
        get(url, tokens["bob"], task.id)
    with pytest.raises(TaskNotFoundError):
        cancel(url, tokens["bob"], task.id)
    theirs = send(url, tokens["bob"], "what is 2+2?", context_id=task.context_id)
    assert theirs.context_id != task.context_id  # bob's own conversation, not alice's
    assert ChatMessage.objects.filter(session_id=task.context_id, role="user").count() == 1
    deadline = time.monotonic() + 60
    while Run.objects.get(pk=task.id).status != "succeeded" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Run.objects.get(pk=task.id).status == "succeeded"  # bob's cancel changed nothing


def test_no_or_a_wrong_token_is_401(url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    assert httpx.post(url + "/", json=body, timeout=10).status_code == 401
    wrong = {"Authorization": "Bearer ap_wrong"}
    assert httpx.post(url + "/", json=body, headers=wrong, timeout=10).status_code == 401


def test_a_malformed_request_is_a_json_rpc_error_and_stores_nothing(url, tokens):
    headers = {"Authorization": f"Bearer {tokens['alice']}"}
    broken = httpx.post(url + "/", content=b"{not json", headers=headers, timeout=10)
    assert broken.status_code == 200 and broken.json()["error"]["code"] == -32700
    no_text = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": []}},
    }
    refused = httpx.post(url + "/", json=no_text, headers=headers, timeout=10).json()
    assert refused["id"] == 2 and refused["error"]["code"] < 0
    assert not ChatSession.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(("hops", "code"), [(3, -32600), ("many", -32602), (-1, -32602)])
def test_a_message_past_the_hop_bound_is_refused_and_starts_nothing(url, tokens, hops, code):
    headers = {"Authorization": f"Bearer {tokens['alice']}", "A2A-Version": "1.0"}
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "translate 早安"}]}
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "SendMessage",
        "params": {"message": {**message, "metadata": {"agent_platform_hops": hops}}},
    }
    refused = httpx.post(url + "/", json=body, headers=headers, timeout=10).json()
    assert refused["error"]["code"] == code
    if hops == 3:
        assert "come through 3 agent platforms already" in refused["error"]["message"]
    assert not ChatSession.objects.exists() and not Run.objects.exists()


def test_a_message_within_the_hop_bound_is_a_turn_that_remembers_its_hops(url, tokens):
    task = send(url, tokens["alice"], "what is 2+3?", hops=2)
    assert task.status.state == COMPLETED
    assert Run.objects.get(pk=task.id).budget["a2a_hops"] == 2


def test_a_wait_for_a_person_is_input_required_then_tasks_get_follows_the_run(url, tokens):
    task = send(url, tokens["alice"], "ask a human: may I expense a taxi?")
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert task.status.message.parts[0].text  # whom it waits for
    # The run parks in the step after the one that asked (the event may come first).
    wait_until(lambda: Run.objects.get(pk=task.id).status == "waiting_human", what="parked")
    assert get(url, tokens["alice"], task.id).status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    cancelled = cancel(url, tokens["alice"], task.id)
    assert cancelled.status.state == CANCELED
    assert Run.objects.get(pk=task.id).status == "cancelled"


def test_the_v0_3_method_names_work_too(url, tokens):
    headers = {"Authorization": f"Bearer {tokens['alice']}"}
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m7",
                "role": "user",
                "parts": [{"kind": "text", "text": "what is 2+2?"}],
            }
        },
    }
    result = httpx.post(url + "/", json=body, headers=headers, timeout=60).json()["result"]
    assert result["status"]["state"] == "completed"
    got = {"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": result["id"]}}
    fetched = httpx.post(url + "/", json=got, headers=headers, timeout=10).json()["result"]
    assert fetched["id"] == result["id"] and fetched["status"]["state"] == "completed"


def test_past_the_send_rate_a_message_is_refused_and_starts_nothing(start_asgi_server, tokens):  # noqa: F811
    url = start_asgi_server(API_THROTTLE_SEND="1/minute").url + "/a2a/assistant"
    assert send(url, tokens["alice"], "what is 2+2?").status.state == COMPLETED
    with pytest.raises(Exception, match="Too many messages"):
        send(url, tokens["alice"], "what is 3+3?")
    assert Run.objects.filter(parent__isnull=True).count() == 1
