"""The demo's remote agent: an A2A translator served by the same process in development, which
the demo's assistant asks like any expert, offline."""

from __future__ import annotations

import openai
import pytest

from agents.demo import TRANSLATOR_PATH, seed_demo_agents
from agents.models import Agent
from chat.interop.demo_translator import translated
from chat.models import ChatMessage
from chat.tokens import token_create
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
