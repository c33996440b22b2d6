"""A remote A2A agent as one of our experts: the `a2a` provider against another platform's
a2a-sdk server (tests/a2a_peer.py on daphne) that streams, fails, hangs or asks for input."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest
from channels.db import database_sync_to_async
from google.protobuf.json_format import MessageToJson

from agents.demo import seed_demo_agents
from agents.models import Agent
from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderError, TextDelta, ToolCallRequest, Usage
from chat.models import ChatMessage, MessageStatus
from chat.tokens import token_create
from delegation.models import Run
from delegation.usage.models import ModelPrice, UsageRecord
from tests.a2a_peer import CARD
from tests.a2a_peer import URL as PEER_URL
from tests.chat.helpers import connect, events_until, send_frame
from tests.delegation.conftest import make_team, team  # noqa: F401  (the fixture)
from tests.delegation.test_run_endings import turn_events
from tests.e2e.conftest import module_asgi_server, start_asgi_server  # noqa: F401  (fixtures)
from tests.factories import make_agent, make_user
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


ASK_USER = {"type": "function", "function": {"name": "ask_user", "parameters": {}}}


def answered(answer: str, status: str = "answered") -> str:
    """A question tool's result as the engine writes it (delegation.humans.waits)."""
    return json.dumps({"ok": True, "result": {"status": status, "answer": answer}})


def test_a_remote_question_is_asked_with_the_question_tool_and_answered_on_its_task(peer):
    asked = list(ask(peer[0], "ask me", tools=[ASK_USER]))
    (call,) = [e for e in asked if isinstance(e, ToolCallRequest)]
    assert call.name == "ask_user" and call.id.startswith("a2a:")
    assert json.loads(call.arguments) == {"question": "Into which language?"}
    said = [
        {"role": "user", "content": "ask me"},
        {"role": "assistant", "content": None, "tool_calls": [tool_entry(call)]},
        {"role": "tool", "tool_call_id": call.id, "content": answered("French")},
    ]
    events = list(
        provider_for("a2a").stream(ModelRequest(model="", messages=said, base_url=peer[0]))
    )
    text_ = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text_ == "Translated into French: ask me"  # the same task: the peer kept its words
    assert [e for e in events if isinstance(e, Usage)] == [Usage(11, 5)]


def test_a_second_question_on_the_same_task_is_a_new_call_answered_on_that_task(peer):
    said: list[dict] = [{"role": "user", "content": "ask twice"}]
    calls = []
    for answer in ("French", "formal"):
        request = ModelRequest(model="", messages=said, base_url=peer[0], tools=[ASK_USER])
        (call,) = [e for e in provider_for("a2a").stream(request) if isinstance(e, ToolCallRequest)]
        calls.append(call)
        said += [
            {"role": "assistant", "content": None, "tool_calls": [tool_entry(call)]},
            {"role": "tool", "tool_call_id": call.id, "content": answered(answer)},
        ]
    assert [json.loads(c.arguments)["question"] for c in calls] == [
        "Into which language?",
        "Formal or casual?",
    ]
    assert calls[0].id != calls[1].id  # (one inbox item each: a call id is asked once)
    assert calls[0].id.split(":")[1] == calls[1].id.split(":")[1]  # the same remote task
    request = ModelRequest(model="", messages=said, base_url=peer[0], tools=[ASK_USER])
    events = list(provider_for("a2a").stream(request))
    text_ = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text_ == "Translated into French, formal: ask twice"


def test_an_unanswered_remote_question_cancels_its_task(peer):
    (call,) = [
        e for e in ask(peer[0], "ask again", tools=[ASK_USER]) if isinstance(e, ToolCallRequest)
    ]
    task_id = call.id.split(":")[1]
    said = [
        {"role": "user", "content": "ask again"},
        {"role": "assistant", "content": None, "tool_calls": [tool_entry(call)]},
        {"role": "tool", "tool_call_id": call.id, "content": answered("", status="expired")},
    ]
    with pytest.raises(ProviderError) as failed:
        list(provider_for("a2a").stream(ModelRequest(model="", messages=said, base_url=peer[0])))
    assert failed.value.code == "model_error" and "Nobody answered" in failed.value.message
    assert f"cancel {task_id}" in peer[1].read_text()


def test_a_remote_asking_for_credentials_is_a_plain_failure(peer):
    with pytest.raises(ProviderError) as failed:
        list(ask(peer[0], "login please", tools=[ASK_USER]))
    assert failed.value.code == "model_error" and "credentials" in failed.value.message


def test_the_usage_a_remote_reports_is_its_usage(peer):
    events = list(ask(peer[0], "count these words"))
    assert [e for e in events if isinstance(e, Usage)] == [
        Usage(prompt_tokens=11, completion_tokens=4)
    ]


def test_a_remote_that_streams_forever_ends_at_the_agents_timeout(peer):
    before = peer[1].read_text() if peer[1].exists() else ""
    with pytest.raises(ProviderError) as failed:
        list(ask(peer[0], "talk forever", timeout=1.0))
    assert failed.value.code == "model_timeout" and "within 1 seconds" in failed.value.message
    wait_until(lambda: peer[1].exists() and peer[1].read_text() != before, what="the cancel")


def test_secret_headers_come_from_their_variables(peer, monkeypatch):
    monkeypatch.setenv("PEER_KEY", "sesame-42")
    list(ask(peer[0], "hello", secret_headers={"X-Peer-Key": "PEER_KEY"}))
    assert "key sesame-42" in peer[1].read_text()
    monkeypatch.delenv("PEER_KEY")
    with pytest.raises(ProviderError) as unset:
        list(ask(peer[0], "hello", secret_headers={"X-Peer-Key": "PEER_KEY"}))
    assert unset.value.code == "model_misconfigured"
    assert "PEER_KEY" in unset.value.message and "X-Peer-Key" in unset.value.message


def tool_entry(call: ToolCallRequest) -> dict:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


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


def test_a_remote_agents_tools_secret_headers_and_timeout_are_checked(db, settings):
    from django.core.exceptions import ValidationError

    from agents.services import agent_check

    agent = Agent(
        name="remote",
        display_name="Remote",
        provider="a2a",
        base_url="http://peer.example/",
        tool_keys=["calculate", "ask_user"],
        secret_headers={"X Bad": "PEER_KEY", "X-Ok": "lower_case"},
        call_timeout_seconds=settings.MODEL_CALL_WORST_SECONDS + 1,
    )
    with pytest.raises(ValidationError) as refused:
        agent_check(agent=agent)
    errors = refused.value.message_dict
    assert "uses its own tools, not calculate" in errors["tool_keys"][0]
    assert "not a header name" in errors["secret_headers"][0]
    assert "worker's time limit" in errors["call_timeout_seconds"][0]
    agent.tool_keys, agent.call_timeout_seconds = ["ask_user"], 30
    agent.secret_headers = {"X-Peer-Key": "PEER_KEY"}
    agent_check(agent=agent)  # (no error)


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
    (note,) = [e for e in events if e["type"] == "run.progress"]  # its status, on its panel
    assert note["data"] == {"text": "Translating…"} and note["agent"]["name"] == "translator"
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


@pytest.fixture
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


@pytest.mark.django_db(transaction=True)
async def test_the_remote_asks_our_user_and_the_answer_goes_back_on_its_task(
    peer,
    user,
    team,  # noqa: F811
    sync_tasks,
):
    await database_sync_to_async(remote_translator)(peer[0], price=Decimal("1"))
    team.script("boss", delegate("translator", task="ask me: 早安"), text("Done."))
    ws = await connect(user)
    await ws.send_json_to(send_frame("translate 早安"))
    waiting = (await events_until(ws, "run.waiting", 20))[-1]
    assert waiting["agent"]["name"] == "translator" and waiting["data"]["audience"] == "user"
    called = await database_sync_to_async(
        lambda: ChatMessage.objects.get(run__depth=1, role="tool")
    )()
    assert called.tool["name"] == "ask_user"
    assert called.tool["arguments"] == {"question": "Into which language?"}

    await ws.send_json_to(
        {"type": "human.answer", "item_id": waiting["data"]["item_id"], "answer": "French"}
    )
    events = await events_until(ws, "run.completed", 20, depth=0)
    await ws.disconnect()
    assert events[-1]["data"]["status"] == "succeeded"
    answer = await database_sync_to_async(
        lambda: ChatMessage.objects.filter(run__depth=1, role="agent").latest("created_at")
    )()
    assert answer.content == "Translated into French: ask me: 早安"  # the same remote task
    told = team.requests["boss"][-1]["messages"][-1]["content"]
    assert "Translated into French" in told
    record = await database_sync_to_async(
        lambda: UsageRecord.objects.filter(agent_name="translator").latest("created_at")
    )()
    assert (record.model, record.prompt_tokens, record.completion_tokens) == ("translator", 11, 6)
    assert record.cost > 0  # priced as the admin priced the remote agent


@pytest.mark.django_db(transaction=True)
async def test_a_remote_asking_twice_is_two_questions_to_our_user(
    peer,
    user,
    team,  # noqa: F811
    sync_tasks,
):
    await database_sync_to_async(remote_translator)(peer[0], price=Decimal("1"))
    team.script("boss", delegate("translator", task="ask twice: 早安"), text("Done."))
    ws = await connect(user)
    await ws.send_json_to(send_frame("translate 早安"))
    asked = []
    for answer in ("French", "formal"):
        waiting = (await events_until(ws, "run.waiting", 20))[-1]
        asked.append(waiting["data"]["item_id"])
        frame = {"type": "human.answer", "item_id": waiting["data"]["item_id"], "answer": answer}
        await ws.send_json_to(frame)
    events = await events_until(ws, "run.completed", 20, depth=0)
    await ws.disconnect()
    assert events[-1]["data"]["status"] == "succeeded" and len(set(asked)) == 2
    answer = await database_sync_to_async(
        lambda: ChatMessage.objects.filter(run__depth=1, role="agent").latest("created_at")
    )()
    assert answer.content == "Translated into French, formal: ask twice: 早安"


def remote_translator(url: str, *, price: Decimal) -> None:
    """The boss (entry) may ask the translator, a remote agent at `url` that asks its questions
    of the user, priced at `price` per million tokens each way."""
    agents = make_team(boss=["translator"], translator=[])
    Agent.objects.filter(pk=agents["translator"].pk).update(
        provider="a2a", base_url=url, model="", tool_keys=["ask_user"]
    )
    ModelPrice.objects.create(
        provider="a2a", model="translator", input_per_million=price, output_per_million=price
    )


@pytest.mark.django_db(transaction=True)
async def test_a_remote_call_over_the_turns_money_budget_fails_and_the_parent_goes_on(
    peer,
    user,
    team,  # noqa: F811
    settings,
):
    settings.TURN_MAX_COST = Decimal("1")
    await database_sync_to_async(remote_translator)(peer[0], price=Decimal("100000"))
    team.script("boss", delegate("translator", task="早安"), text("The translator was too dear."))
    events = await turn_events(user, "translate 早安")
    ended = next(e for e in events if e["type"] == "delegation.completed")
    assert ended["data"]["status"] == "failed"
    assert "费用会超出支出上限" in ended["data"]["error"]["message"]  # (asked in Chinese)
    child = await database_sync_to_async(lambda: Run.objects.get(depth=1))()
    assert child.error["code"] == "budget_exceeded"  # refused before the remote was asked
    root = [e for e in events if e["type"] == "run.completed" and e["agent"]["depth"] == 0][-1]
    assert root["data"]["status"] == "succeeded"
    assert len(team.requests["boss"]) == 2  # the boss went on, told of the failure


class _Garbled(BaseHTTPRequestHandler):
    """A remote whose card is fine but whose JSON-RPC answers are not JSON."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        card = MessageToJson(CARD).replace(PEER_URL, f"http://127.0.0.1:{port}/")
        self._send(card.encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send(b'{"jsonrpc": "2.0", "result": {oops', "application/json")

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_remote_answering_malformed_json_is_a_plain_model_error():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbled)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ProviderError) as failed:
            list(ask(f"http://127.0.0.1:{server.server_address[1]}/", "hello"))
    finally:
        server.shutdown()
        server.server_close()
    assert failed.value.code == "model_error"
    assert "answer could not be read: Invalid JSON-RPC response" in failed.value.message


@pytest.mark.django_db(transaction=True)
async def test_a_remote_expert_deeper_than_the_turn_allows_is_refused_unasked(
    peer,
    user,
    team,  # noqa: F811
):
    def build() -> None:
        remote_translator(peer[0], price=Decimal("1"))
        boss = Agent.objects.get(name="boss")
        finance = make_agent("finance", provider="openai", model="fake", display_name="Finance")
        boss.allowed_subagents.set([finance])
        finance.allowed_subagents.set([Agent.objects.get(name="translator")])
        Agent.objects.filter(pk=boss.pk).update(max_depth=1)

    await database_sync_to_async(build)()
    team.script("boss", delegate("finance"), text("boss done"))
    team.script("finance", delegate("translator", task="早安"), text("finance done"))
    events = await turn_events(user, "translate 早安")
    refused = [
        e for e in events if e["type"] == "delegation.completed" and e["agent"]["depth"] == 1
    ]
    assert refused and refused[0]["data"]["error"]["code"] == "delegation_depth"
    assert events[-1]["data"]["status"] == "succeeded"


def test_a_message_says_how_many_agent_platforms_it_came_through(peer):
    list(ask(peer[0], "count my hops"))
    list(ask(peer[0], "count my hops again", a2a_hops=2))
    log = peer[1].read_text()
    assert "hops 1 count my hops\n" in log and "hops 3 count my hops again\n" in log


@pytest.mark.django_db(transaction=True)
def test_two_platforms_asking_each_other_stop_at_the_hop_bound(start_asgi_server):  # noqa: F811
    """The translator is our own A2A endpoint, so each ask starts a turn that asks it again:
    the second platform hop is refused, and every turn still ends with an answer."""
    seed_demo_agents()
    raw = token_create(user=make_user("alice"), name="loop")[1]
    server = start_asgi_server(A2A_MAX_HOPS="2", LOOP_TOKEN=raw)
    Agent.objects.filter(name="translator").update(
        base_url=server.url + "/a2a/assistant", api_key_env="LOOP_TOKEN", tool_keys=[]
    )
    api = openai.OpenAI(base_url=f"{server.url}/api/openai/v1", api_key=raw, max_retries=0)
    api.chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "請翻譯成簡體：會議在下週一"}]
    )
    roots = Run.objects.filter(parent__isnull=True)
    assert sorted(r.budget.get("a2a_hops", 0) for r in roots) == [0, 1]  # one hop, no more
    refused = Run.objects.get(depth=1, root__budget__a2a_hops=1)
    assert refused.status == "failed" and "A2A_MAX_HOPS allows 2" in refused.error["detail"]
    assert all(r.status == "succeeded" for r in roots)
