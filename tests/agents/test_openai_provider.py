"""The openai provider, driven through the real `openai` SDK against the local fake server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agents.providers import provider_for
from agents.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextDelta,
    ToolCallRequest,
    Usage,
)
from agents.providers.openai_provider import stream_chunks
from tests.fake_openai import Reply, error, text, tool_call, tool_calls

CALCULATE = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": "Evaluate arithmetic.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}


def _request(**fields: Any) -> ModelRequest:
    fields.setdefault("model", "fake-model")
    fields.setdefault("messages", [{"role": "user", "content": "hello"}])
    return ModelRequest(**fields)


def _stream(request: ModelRequest | None = None) -> list[ProviderEvent]:
    return list(provider_for("openai").stream(request or _request()))


def _failure(request: ModelRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        _stream(request)
    return caught.value


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class _CutShort(BaseHTTPRequestHandler):
    """Streams one text chunk, then closes without a finish_reason or [DONE]."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "The answer is"}, "finish_reason": None}],
        }
        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.close_connection = True


@pytest.fixture
def cut_short_url(settings) -> Iterator[str]:
    """A server whose stream ends mid-answer, as when a proxy drops the connection."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CutShort)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_MAX_RETRIES = 0
    settings.OPENAI_TIMEOUT = 5.0
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_text_deltas_arrive_in_order_then_usage(fake_openai):
    fake_openai.script(text("Hel", "lo, ", "wor", "ld!"))

    events = _stream()

    assert events == [
        TextDelta("Hel"),
        TextDelta("lo, "),
        TextDelta("wor"),
        TextDelta("ld!"),
        Usage(prompt_tokens=11, completion_tokens=7),
    ]


def test_usage_reports_the_servers_token_counts(fake_openai):
    fake_openai.script(Reply(text_chunks=["ok"], prompt_tokens=123, completion_tokens=45))

    usage = _stream()[-1]

    assert usage == Usage(123, 45)
    assert usage.total_tokens == 168


def test_tool_call_arguments_split_across_chunks_are_assembled_exactly(fake_openai):
    arguments = {"expression": "(1200 * 0.05) + 3", "note": "ünïcode ✓"}
    raw = json.dumps(arguments)
    fake_openai.script(tool_call("calculate", raw, split=7))

    events = _stream(_request(tools=[CALCULATE]))

    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert len(calls) == 1
    assert calls[0].name == "calculate"
    assert calls[0].arguments == raw
    assert json.loads(calls[0].arguments) == arguments
    assert calls[0].id.startswith("call_0_")
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert isinstance(events[-1], Usage)


def test_two_tool_calls_in_one_reply_come_back_separately_in_order(fake_openai):
    fake_openai.script(
        tool_calls(
            ("current_time", {"timezone": "Asia/Taipei"}), ("calculate", {"expression": "6*7"})
        )
    )

    calls = [e for e in _stream(_request(tools=[CALCULATE])) if isinstance(e, ToolCallRequest)]

    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("current_time", {"timezone": "Asia/Taipei"}),
        ("calculate", {"expression": "6*7"}),
    ]
    assert calls[0].id != calls[1].id


def test_model_temperature_max_tokens_and_tools_are_sent(fake_openai):
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 6*7?"},
    ]

    _stream(
        _request(
            model="my-model", messages=messages, tools=[CALCULATE], temperature=0.25, max_tokens=321
        )
    )

    body = fake_openai.requests[-1]
    assert body["model"] == "my-model"
    assert body["messages"] == messages
    assert body["temperature"] == 0.25
    assert body["max_tokens"] == 321
    assert body["tools"] == [CALCULATE]
    assert body["stream"] is True


def test_unset_options_are_not_sent_and_model_defaults_from_settings(fake_openai, settings):
    settings.OPENAI_MODEL = "site-default-model"

    _stream(_request(model=""))

    body = fake_openai.requests[-1]
    assert body["model"] == "site-default-model"
    assert "tools" not in body
    assert "temperature" not in body
    assert "max_tokens" not in body


def test_request_base_url_wins_over_settings(fake_openai, settings):
    settings.OPENAI_BASE_URL = _closed_port_url()  # would fail if it were used
    fake_openai.script(text("from the agent's own server"))

    events = _stream(_request(base_url=fake_openai.base_url))

    assert events[0] == TextDelta("from the agent's own server")
    assert len(fake_openai.requests) == 1


def test_server_error_is_retried_and_then_succeeds(fake_openai, settings):
    settings.OPENAI_MAX_RETRIES = 1
    fake_openai.script(error(500, "try again"), text("second time lucky"))

    events = _stream()

    assert events[0] == TextDelta("second time lucky")
    assert len(fake_openai.requests) == 2


def test_rate_limit_without_retries(fake_openai):
    fake_openai.script(error(429, "slow down"))

    assert _failure().code == "model_rate_limited"
    assert len(fake_openai.requests) == 1


def test_rejected_credentials(fake_openai):
    fake_openai.script(error(401, "bad key"))

    assert _failure().code == "model_auth"


def test_bad_request_carries_the_servers_message(fake_openai):
    fake_openai.script(error(400, "context length exceeded for fake-model"))

    failure = _failure()

    assert failure.code == "model_error"
    assert "400" in failure.message
    assert "context length exceeded for fake-model" in failure.message


def test_service_unavailable(fake_openai):
    fake_openai.script(error(503, "overloaded"))

    assert _failure().code == "model_unavailable"


def test_malformed_stream_chunk_is_a_provider_error(fake_openai):
    fake_openai.script(Reply(malformed=True))

    assert _failure().code == "model_error"


def test_stream_cut_short_is_an_error_not_a_partial_answer(cut_short_url):
    events: list[ProviderEvent] = []

    with pytest.raises(ProviderError) as caught:
        events.extend(provider_for("openai").stream(_request(base_url=cut_short_url)))

    assert caught.value.code == "model_error"
    assert events == [TextDelta("The answer is")]


def test_stall_longer_than_the_timeout(fake_openai, settings):
    settings.OPENAI_TIMEOUT = 0.5
    fake_openai.script(Reply(text_chunks=["too late"], stall_seconds=2))

    failure = _failure()

    assert failure.code == "model_timeout"
    assert "0.5 seconds" in failure.message


def test_connection_refused(settings):
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_MAX_RETRIES = 0
    settings.OPENAI_TIMEOUT = 5.0
    settings.OPENAI_BASE_URL = _closed_port_url()

    assert _failure().code == "model_unavailable"


def test_no_api_key_and_no_base_url_is_misconfigured(settings):
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""

    failure = _failure()

    assert failure.code == "model_misconfigured"
    assert "OPENAI_API_KEY" in failure.message


def test_a_base_url_alone_needs_no_api_key(fake_openai, settings):
    settings.OPENAI_API_KEY = ""
    fake_openai.script(text("local model"))

    assert _stream()[0] == TextDelta("local model")


def test_unknown_provider_name_is_misconfigured():
    with pytest.raises(ProviderError) as caught:
        provider_for("anthropic-ish")

    assert caught.value.code == "model_misconfigured"


def test_agent_key_variable_is_used_and_a_missing_one_is_a_clear_error(
    fake_openai, settings, monkeypatch
):
    settings.OPENAI_API_KEY = ""
    fake_openai.script(text("hi"))
    monkeypatch.setenv("TEAM_B_KEY", "secret-b")
    provider = provider_for("openai")
    request = ModelRequest(
        model="m", messages=[{"role": "user", "content": "x"}], api_key_env="TEAM_B_KEY"
    )
    list(provider.stream(request))
    assert fake_openai.authorizations[-1] == "Bearer secret-b"
    monkeypatch.delenv("TEAM_B_KEY")
    with pytest.raises(ProviderError) as caught:
        list(provider.stream(request))
    assert caught.value.code == "model_misconfigured" and "TEAM_B_KEY" in caught.value.message


def test_secret_headers_are_sent_from_their_variables(fake_openai, monkeypatch):
    fake_openai.script(text("hi"))
    monkeypatch.setenv("GATEWAY_KEY", "sub-123")
    request = ModelRequest(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        secret_headers={"Ocp-Apim-Subscription-Key": "GATEWAY_KEY"},
    )
    list(provider_for("openai").stream(request))
    assert fake_openai.headers[-1]["ocp-apim-subscription-key"] == "sub-123"
    monkeypatch.delenv("GATEWAY_KEY")
    with pytest.raises(ProviderError) as caught:
        list(provider_for("openai").stream(request))
    assert caught.value.code == "model_misconfigured" and "GATEWAY_KEY" in caught.value.message


def test_an_agents_own_timeout_wins_over_the_setting(fake_openai, settings):
    settings.OPENAI_TIMEOUT = 30.0
    fake_openai.script(Reply(text_chunks=["too late"], stall_seconds=2))
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "x"}], timeout=0.5)
    with pytest.raises(ProviderError) as caught:
        list(provider_for("openai").stream(request))
    assert caught.value.code == "model_timeout" and "0.5 seconds" in caught.value.message


def test_the_stream_reader_skips_other_fields_and_stops_at_done():
    lines = [
        ": keep-alive comment",
        "event: message",
        'data: {"choices": []}',
        "",
        'data:{"choices": [], "usage": {"prompt_tokens": 3}}',
        "",
        'data: {"choices":',  # one event's data over two lines, joined by a newline
        "data: [1]}",
        "",
        "data: [DONE]",
        "",
        'data: {"after": "done"}',
        "",
    ]
    assert list(stream_chunks(iter(lines))) == [
        {"choices": []},
        {"choices": [], "usage": {"prompt_tokens": 3}},
        {"choices": [1]},
    ]


def test_text_with_line_separators_inside_json_streams_whole(fake_openai):
    # U+2028/U+2029/U+0085 are legal unescaped in JSON strings; only LF ends an SSE line.
    pieces = ["one\u2028two", " three\u2029four", " five\x85six"]
    fake_openai.script(Reply(text_chunks=pieces, raw_unicode=True))
    events = _stream()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(pieces)


def test_an_error_sent_inside_the_stream_fails_the_call_with_its_message():
    lines = ['data: {"choices": []}', "", 'data: {"error": {"message": "overloaded, try later"}}']
    with pytest.raises(ProviderError) as raised:
        list(stream_chunks(iter(lines)))
    assert raised.value.code == "model_error"
    assert "overloaded, try later" in raised.value.message


def test_a_chunk_that_is_not_an_object_is_a_bad_stream():
    with pytest.raises(json.JSONDecodeError):
        list(stream_chunks(iter(["data: [1, 2]"])))


def test_the_body_sent_is_the_request_as_the_sdk_would_have_sent_it(fake_openai):
    """Messages and tools skip the SDK's walk over its typed parameters (extra_body): the
    server receives the same body, and that walk would not have changed any of it. A new SDK
    whose walk changes chat requests fails here."""
    from openai._utils import maybe_transform
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    from agents.providers.openai_provider import request_body

    messages = [
        {"role": "system", "content": "Be brief. 簡潔に。"},
        {"role": "user", "content": "What is 6*7?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "calculate", "arguments": '{"expression": "6*7"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true, "value": 42}'},
    ]
    request = _request(
        model="my-model", messages=messages, tools=[CALCULATE], temperature=0.5, max_tokens=99
    )
    _stream(request)
    body = request_body(request)
    assert fake_openai.requests[-1] == json.loads(json.dumps(body))
    assert maybe_transform(body, CompletionCreateParamsStreaming) == body
