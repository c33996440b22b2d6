"""A remote A2A agent as one of our experts: the `a2a` provider against another platform's
a2a-sdk server (tests/a2a_peer.py on daphne) that streams, fails, hangs or asks for input."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from agents.demo import seed_demo_agents
from agents.models import Agent
from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderError, TextDelta
from chat.models import ChatMessage, MessageStatus
from delegation.models import Run
from tests.delegation.conftest import make_team, team  # noqa: F401  (the fixture)
from tests.delegation.test_run_endings import turn_events
from tests.e2e.conftest import module_asgi_server  # noqa: F401  (the fixture)
from tests.fake_openai import delegate, text
from tests.server_logs import ROOT
from tests.waiting import wait_until


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def peer(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """The peer on daphne: its base URL, and the file it logs each cancel to."""
    port, log = free_port(), tmp_path_factory.mktemp("peer") / "cancels.log"
    url = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "PEER_URL": url, "PEER_LOG": str(log)}
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        + ["tests.a2a_peer:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _accepts(port), timeout=30, what="the A2A peer to listen")
        yield url, log
    finally:
        process.terminate()
        process.wait(timeout=10)


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def ask(url: str, task: str, **fields) -> Iterator:
    request = ModelRequest(
        model="", messages=[{"role": "user", "content": task}], base_url=url, **fields
    )
    return provider_for("a2a").stream(request)


def test_the_remote_answer_streams_in_pieces(peer):
    pieces = [
        event.text for event in ask(peer[0], "你好 hello there") if isinstance(event, TextDelta)
    ]
    assert "".join(pieces) == "Translated: 你好 hello there"
    assert len(pieces) > 2


def test_a_failing_remote_is_a_model_error_with_its_words(peer):
    with pytest.raises(ProviderError) as failed:
        list(ask(peer[0], "please fail"))
    assert failed.value.code == "model_error" and "broke down" in failed.value.message


def test_a_remote_asking_for_input_ends_the_answer_with_its_question(peer):
    said = "".join(e.text for e in ask(peer[0], "ask me") if isinstance(e, TextDelta))
    assert said == "Into which language?"


def test_a_hanging_remote_times_out_and_its_task_is_cancelled(peer, settings):
    settings.A2A_TIMEOUT_SECONDS = 1.0
    before = peer[1].read_text() if peer[1].exists() else ""
    with pytest.raises(ProviderError) as failed:
        list(ask(peer[0], "hang on"))
    assert failed.value.code == "model_timeout"
    wait_until(lambda: peer[1].exists() and peer[1].read_text() != before, what="the cancel")


def test_a_delegation_stopped_mid_answer_cancels_the_remote_task(peer):
    before = peer[1].read_text() if peer[1].exists() else ""
    stream = ask(peer[0], "slow words one two three four five six")
    first = next(event for event in stream if isinstance(event, TextDelta))
    assert first.text == "Translated: "
    stream.close()  # the run stopped reading: stopped, timed out or taken over
    wait_until(lambda: peer[1].exists() and peer[1].read_text() != before, what="the cancel")


def test_an_unreachable_remote_and_a_missing_key_are_plain_errors(peer, monkeypatch):
    with pytest.raises(ProviderError) as unreachable:
        list(ask(f"http://127.0.0.1:{free_port()}/", "hello"))
    assert unreachable.value.code == "model_unavailable"
    monkeypatch.delenv("PEER_TOKEN", raising=False)
    with pytest.raises(ProviderError) as unset:
        list(ask(peer[0], "hello", api_key_env="PEER_TOKEN"))
    assert unset.value.code == "model_misconfigured" and "PEER_TOKEN" in unset.value.message


def test_an_agent_of_the_a2a_provider_needs_its_base_url(db):
    from django.core.exceptions import ValidationError

    from agents.services import agent_check

    agent = Agent(name="remote", display_name="Remote", provider="a2a", base_url="")
    with pytest.raises(ValidationError) as refused:
        agent_check(agent=agent)
    assert "base_url" in refused.value.message_dict


@pytest.mark.django_db(transaction=True)
async def test_an_entry_agent_delegates_to_the_remote_like_any_expert(peer, user, team):  # noqa: F811
    agents = await database_sync_to_async(make_team)(boss=["translator"], translator=[])
    await database_sync_to_async(
        lambda: Agent.objects.filter(pk=agents["translator"].pk).update(
            provider="a2a", base_url=peer[0], model=""
        )
    )()
    team.script("boss", delegate("translator", task="早安 good morning"), text("It says hello."))
    events = await turn_events(user, "translate 早安")

    root = [e for e in events if e["type"] == "run.completed" and e["agent"]["depth"] == 0][-1]
    assert root["data"]["status"] == "succeeded"
    expert_words = [
        e["data"]["text"]
        for e in events
        if e["type"] == "message.delta" and e["agent"]["depth"] == 1
    ]
    assert "".join(expert_words).startswith("Translated: ")
    saved = await database_sync_to_async(
        lambda: ChatMessage.objects.get(run__depth=1, role="agent")
    )()
    assert saved.content == "Translated: 早安 good morning"
    assert saved.status == MessageStatus.COMPLETED and saved.agent["name"] == "translator"
    told = team.requests["boss"][-1]["messages"][-1]["content"]
    assert "Translated: 早安 good morning" in told
    child = await database_sync_to_async(lambda: Run.objects.get(depth=1))()
    assert child.status == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_refused_credentials_are_a_plain_auth_error(module_asgi_server, monkeypatch):  # noqa: F811
    seed_demo_agents()  # our own A2A server as the remote: its JSON-RPC wants a user's token
    monkeypatch.setenv("REMOTE_TOKEN", "ap_not-a-token")
    url = module_asgi_server.url + "/a2a/assistant"
    with pytest.raises(ProviderError) as refused:
        list(ask(url, "hello", api_key_env="REMOTE_TOKEN"))
    assert refused.value.code == "model_auth"
