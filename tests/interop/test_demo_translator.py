"""The demo's remote agent: an A2A translator served by the same process in development, which
the demo's assistant asks like any expert, offline."""

from __future__ import annotations

import openai
import pytest
from channels.db import database_sync_to_async

from agents.demo import TRANSLATOR_PATH, seed_demo_agents
from agents.models import Agent
from chat.interop.demo_translator import QUESTION, WORKING, has_text_to_convert, translated
from chat.models import ChatMessage
from chat.tokens import token_create
from tests.chat.helpers import connect, events_until, send_frame
from tests.e2e.conftest import module_asgi_server  # noqa: F401  (the fixture)
from tests.factories import make_user


@pytest.mark.parametrize(
    ("asked", "answer"),
    [
        ("翻譯成簡體：會議在下週一", "翻译成简体：会议在下周一"),
        ("translate into traditional: 会议在下周一", "translate into traditional: 會議在下週一"),
        ("请翻译：这个软件的发票", "請翻譯：這個軟件的發票"),  # no script named: the other one
        ("hello", "hello"),
    ],
)
def test_the_translator_converts_to_the_script_asked_for(asked, answer):
    assert translated(asked) == answer


@pytest.mark.django_db(transaction=True)
def test_the_assistant_asks_the_remote_translator_over_a2a(module_asgi_server):  # noqa: F811
    seed_demo_agents()
    Agent.objects.filter(name="translator").update(
        base_url=module_asgi_server.url + TRANSLATOR_PATH
    )
    key = token_create(user=make_user("alice"), name="demo")[1]
    api = openai.OpenAI(
        base_url=f"{module_asgi_server.url}/api/openai/v1", api_key=key, max_retries=0
    )
    reply = api.chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "請翻譯成簡體：會議在下週一"}]
    )
    assert "会议在下周一" in reply.choices[0].message.content
    expert = ChatMessage.objects.get(run__depth=1, role="agent")
    assert expert.agent["name"] == "translator"
    assert expert.content == "[offline translator] 请翻译成简体：会议在下周一"


@pytest.mark.parametrize(
    ("asked", "has_text"),
    [
        ("幫我翻譯", False),
        ("请翻译成简体", False),
        ("please translate into traditional", False),
        ("請翻譯成簡體：會議在下週一", True),
        ("translate 早安", True),
    ],
)
def test_the_translator_asks_for_the_text_when_the_task_has_none(asked, has_text):
    assert has_text_to_convert(asked) is has_text


@pytest.mark.django_db(transaction=True)
async def test_the_translator_asks_the_user_for_the_text_and_converts_the_answer(
    module_asgi_server,  # noqa: F811
    settings,
):
    """Offline, as in the demo: the remote's question reaches the user as the assistant's
    expert's question; the user's answer goes back on the same remote task."""
    settings.TASKS_RUN_SYNC = True
    await database_sync_to_async(seed_demo_agents)()
    await database_sync_to_async(
        lambda: Agent.objects.filter(name="translator").update(
            base_url=module_asgi_server.url + TRANSLATOR_PATH
        )
    )()
    user = await database_sync_to_async(make_user)("bob")
    ws = await connect(user)
    await ws.send_json_to(send_frame("請幫我翻譯"))
    events = await events_until(ws, "run.waiting", 20)
    waiting = events[-1]
    assert waiting["agent"]["name"] == "translator" and waiting["data"]["audience"] == "user"
    called = next(e for e in events if e["type"] == "tool.called")
    assert called["data"]["arguments"] == {"question": QUESTION}
    note = next(e for e in events if e["type"] == "run.progress")
    assert note["data"]["text"] == WORKING and note["agent"]["name"] == "translator"

    answer = {"type": "human.answer", "item_id": waiting["data"]["item_id"]}
    await ws.send_json_to({**answer, "answer": "會議在下週一，請準備發票"})
    events = await events_until(ws, "run.completed", 20, depth=0)
    await ws.disconnect()
    assert events[-1]["data"]["status"] == "succeeded"
    converted = await database_sync_to_async(
        lambda: ChatMessage.objects.filter(run__depth=1, role="agent").latest("created_at")
    )()
    assert converted.content == "[offline translator] 会议在下周一，请准备发票"
