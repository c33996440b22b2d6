"""The OpenAI-compatible API through the official `openai` client: models, completions whole and
streamed, sessions, usage, the experts' events on request, and every refusal."""

from __future__ import annotations

import socket

import httpx
import openai
import pytest
from channels.db import database_sync_to_async
from django.core.asgi import get_asgi_application
from rest_framework.throttling import ScopedRateThrottle

from agents.demo import seed_demo_agents
from chat.models import ChatMessage, ChatSession, MessageRole
from chat.tokens import token_create
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "budget check: what is 1200*0.05?"  # offline routing: assistant → finance → math
BASE = "http://testserver/api/openai/v1"


@pytest.fixture
def team(db):
    seed_demo_agents()


def token_of(username: str, **fields) -> str:
    user = make_user(username, **fields)
    return token_create(user=user, name="openai")[1]


def client(key: str) -> openai.AsyncOpenAI:
    """The official client, in process against the ASGI application (no sockets)."""
    transport = httpx.ASGITransport(app=get_asgi_application())
    http = httpx.AsyncClient(transport=transport, base_url="http://testserver", timeout=60)
    return openai.AsyncOpenAI(base_url=BASE, api_key=key, http_client=http, max_retries=0)


@database_sync_to_async
def messages_in(session_id: str) -> list[tuple[str, str]]:
    rows = ChatMessage.objects.filter(session_id=session_id).order_by("created_at")
    return [(m.role, m.content) for m in rows]


async def test_models_list_the_entry_agent_to_a_user_who_may_use_it(team):
    key = await database_sync_to_async(token_of)("alice")
    models = await client(key).models.list()
    assert [m.id for m in models.data] == ["assistant"]
    assert models.data[0].owned_by == "agent-platform"


async def test_a_whole_completion_answers_through_the_experts_and_reports_usage(team):
    key = await database_sync_to_async(token_of)("alice")
    raw = await client(key).chat.completions.with_raw_response.create(
        model="assistant", messages=[{"role": "user", "content": QUESTION}]
    )
    completion = raw.parse()
    answer = completion.choices[0].message.content
    assert "60" in answer and completion.choices[0].finish_reason == "stop"
    assert completion.usage.total_tokens > 0
    extension = completion.model_extra["x_agent_platform"]
    assert extension["status"] == "succeeded"
    session_id = raw.headers["X-Session-Id"]
    assert extension["session_id"] == session_id
    saved = await messages_in(session_id)
    assert saved[0] == (MessageRole.USER, QUESTION)
    # The experts' words stay out of the answer: it is the entry agent's alone.
    roots = await database_sync_to_async(
        lambda: list(
            ChatMessage.objects.filter(
                session_id=session_id, role=MessageRole.AGENT, agent__depth=0
            ).values_list("content", flat=True)
        )
    )()
    assert answer == "\n\n".join(t for t in roots if t)


async def test_a_streamed_completion_sends_chunks_then_usage_and_done(team):
    key = await database_sync_to_async(token_of)("alice")
    stream = await client(key).chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "60" in text
    assert chunks[0].choices[0].delta.role == "assistant"
    finished = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finished] == ["stop"]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert all(c.model_extra.get("x_agent_event") is None for c in chunks)


async def test_the_experts_tagged_events_come_only_when_asked_for(team):
    key = await database_sync_to_async(token_of)("alice")
    stream = await client(key).chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        extra_body={"x_agent_events": True},
    )
    events = [
        c.model_extra["x_agent_event"] async for c in stream if c.model_extra.get("x_agent_event")
    ]
    started = [e["data"]["target"] for e in events if e["type"] == "delegation.started"]
    assert "finance" in started
    experts = {e["agent"]["name"] for e in events if e["agent"] and e["agent"]["depth"] > 0}
    assert "finance" in experts


async def test_a_session_header_continues_the_conversation_with_its_own_history(team):
    key = await database_sync_to_async(token_of)("alice")
    api = client(key)
    first = await api.chat.completions.with_raw_response.create(
        model="assistant", messages=[{"role": "user", "content": "what is 2+2?"}]
    )
    session_id = first.headers["X-Session-Id"]
    second = await api.chat.completions.create(
        model="assistant",
        messages=[
            {"role": "user", "content": "what is 2+2?"},
            {"role": "assistant", "content": first.parse().choices[0].message.content},
            {"role": "user", "content": "and 3*3?"},
        ],
        extra_headers={"X-Session-Id": session_id},
    )
    assert "9" in second.choices[0].message.content
    users = [text for role, text in await messages_in(session_id) if role == MessageRole.USER]
    assert users == ["what is 2+2?", "and 3*3?"]  # the session's history, not the client's copy


async def test_without_a_session_the_earlier_messages_travel_with_the_question(team):
    key = await database_sync_to_async(token_of)("alice")
    raw = await client(key).chat.completions.with_raw_response.create(
        model="assistant",
        messages=[
            {"role": "system", "content": "ignored: the agent has its own prompt"},
            {"role": "user", "content": "my name is 小明"},
            {"role": "assistant", "content": "Hello 小明"},
            {"role": "user", "content": "what is 3*3?"},
        ],
    )
    [(role, text), *_] = await messages_in(raw.headers["X-Session-Id"])
    assert text.startswith("what is 3*3?") and "User: my name is 小明" in text
    assert "Assistant: Hello 小明" in text and "ignored" not in text


async def test_the_user_field_names_one_session_per_caller(team):
    alice = await database_sync_to_async(token_of)("alice")
    bob = await database_sync_to_async(token_of)("bob")
    ask = {
        "model": "assistant",
        "messages": [{"role": "user", "content": "2+2?"}],
        "user": "desk-7",
    }
    a1 = (await client(alice).chat.completions.with_raw_response.create(**ask)).headers
    a2 = (await client(alice).chat.completions.with_raw_response.create(**ask)).headers
    b1 = (await client(bob).chat.completions.with_raw_response.create(**ask)).headers
    assert a1["X-Session-Id"] == a2["X-Session-Id"] != b1["X-Session-Id"]


async def test_another_users_session_is_not_found_and_nothing_is_stored(team):
    alice = await database_sync_to_async(token_of)("alice")
    bob = await database_sync_to_async(token_of)("bob")
    first = await client(alice).chat.completions.with_raw_response.create(
        model="assistant", messages=[{"role": "user", "content": "secret plan"}]
    )
    session_id = first.headers["X-Session-Id"]
    before = await messages_in(session_id)
    with pytest.raises(openai.NotFoundError) as refused:
        await client(bob).chat.completions.create(
            model="assistant",
            messages=[{"role": "user", "content": "what did they say?"}],
            extra_headers={"X-Session-Id": session_id},
        )
    assert "secret" not in str(refused.value.body)
    assert await messages_in(session_id) == before


async def test_a_wrong_or_missing_key_is_401_and_starts_nothing(team):
    await database_sync_to_async(make_user)("alice")
    with pytest.raises(openai.AuthenticationError):
        await client("not-a-token").chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.AuthenticationError):
        await client("not-a-token").models.list()
    transport = httpx.ASGITransport(app=get_asgi_application())
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        bare = await http.post("/api/openai/v1/chat/completions", json={"model": "assistant"})
    assert bare.status_code == 401 and bare.json()["error"]["code"] == "invalid_api_key"
    assert not await database_sync_to_async(ChatSession.objects.exists)()


async def test_an_unknown_agent_is_model_not_found(team):
    key = await database_sync_to_async(token_of)("alice")
    with pytest.raises(openai.NotFoundError) as refused:
        await client(key).chat.completions.create(
            model="finance", messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.body["code"] == "model_not_found"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": "assistant", "messages": "hi"}, "messages"),
        ({"model": "assistant", "messages": []}, "messages"),
        ({"model": "assistant", "messages": [{"role": "assistant", "content": "hi"}]}, "messages"),
        ({"model": "assistant", "messages": [{"role": "wizard", "content": "hi"}]}, "messages[0]"),
        (
            {
                "model": "assistant",
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
                ],
            },
            "messages[0]",
        ),
        (
            {
                "model": "assistant",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": "yes",
            },
            "stream",
        ),
        (
            {
                "model": "assistant",
                "messages": [{"role": "user", "content": "hi"}],
                "user": "x" * 300,
            },
            "user",
        ),
    ],
)
async def test_malformed_requests_are_400_naming_the_field_and_store_nothing(team, body, param):
    key = await database_sync_to_async(token_of)("alice")
    transport = httpx.ASGITransport(app=get_asgi_application())
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        refused = await http.post("/api/openai/v1/chat/completions", json=body, headers=headers)
        not_json = await http.post(
            "/api/openai/v1/chat/completions", content=b"{nope", headers=headers
        )
        bad_session = await http.post(
            "/api/openai/v1/chat/completions",
            json={"model": "assistant", "messages": [{"role": "user", "content": "hi"}]},
            headers={**headers, "X-Session-Id": "not-a-uuid"},
        )
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["param"] == param and refused.json()["error"]["message"]
    assert not_json.status_code == 400 and bad_session.status_code == 400
    assert bad_session.json()["error"]["param"] == "X-Session-Id"
    assert not await database_sync_to_async(ChatSession.objects.exists)()


async def test_an_over_long_question_is_refused_plainly(team, settings):
    settings.CHAT_MAX_MESSAGE_CHARS = 50
    key = await database_sync_to_async(token_of)("alice")
    with pytest.raises(openai.BadRequestError) as refused:
        await client(key).chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "x" * 51}]
        )
    assert refused.value.body["code"] == "message_too_long"
    assert not await database_sync_to_async(ChatMessage.objects.exists)()


async def test_chinese_answers_come_back_in_chinese(team):
    key = await database_sync_to_async(token_of)("alice")
    completion = await client(key).chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "請問 2+2 等於多少？"}]
    )
    assert completion.choices[0].message.content == "[離線模型] 2+2 = 4."


async def test_past_the_send_rate_a_completion_is_429_with_retry_after(team, monkeypatch):
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"send": "1/minute"})
    key = await database_sync_to_async(token_of)("alice")
    ask = {"model": "assistant", "messages": [{"role": "user", "content": "2+2?"}]}
    await client(key).chat.completions.create(**ask)
    with pytest.raises(openai.RateLimitError) as refused:
        await client(key).chat.completions.create(**ask)
    assert refused.value.body["code"] == "rate_limit_exceeded"
    assert int(refused.value.response.headers["Retry-After"]) >= 1
    assert len(await messages_in_all()) == 1


@database_sync_to_async
def messages_in_all() -> list[str]:
    return list(ChatMessage.objects.filter(role=MessageRole.USER).values_list("content", flat=True))


async def test_with_redis_unreachable_a_completion_is_503_and_nothing_is_saved(team, settings):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        }
    }
    key = await database_sync_to_async(token_of)("alice")
    with pytest.raises(openai.InternalServerError) as refused:
        await client(key).chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "2+2?"}]
        )
    assert refused.value.status_code == 503
    assert refused.value.body["code"] == "service_unavailable"
    assert refused.value.response.headers["Retry-After"] == "5"
    assert await messages_in_all() == []
