"""The OpenAI-compatible API over a real socket: the official client gets the answer as it
streams, not at the end."""

from __future__ import annotations

import openai
import pytest

from agents.demo import seed_demo_agents
from chat.tokens import token_create
from delegation.models import Run
from tests.e2e.conftest import start_asgi_server  # noqa: F401  (the server fixture)
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_answer_streams_to_the_official_client_while_the_turn_runs(start_asgi_server):  # noqa: F811
    seed_demo_agents()
    key = token_create(user=make_user("alice"), name="openai")[1]
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="40")
    api = openai.OpenAI(base_url=f"{server.url}/api/openai/v1", api_key=key, max_retries=0)
    stream = api.chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": "budget check: what is 1200*0.05?"}],
        stream=True,
    )
    pieces, running_at_first = [], None
    for chunk in stream:
        content = chunk.choices[0].delta.content if chunk.choices else None
        if content and running_at_first is None:
            root = Run.objects.get(parent__isnull=True)
            running_at_first = not root.is_final
        if content:
            pieces.append(content)
    assert running_at_first, "the first words came only after the turn had ended"
    assert len(pieces) > 1 and "60" in "".join(pieces)
    assert Run.objects.get(parent__isnull=True).status == "succeeded"
