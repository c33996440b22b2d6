"""The built-in offline model: deterministic rules, tool calls from the user's words, honesty."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.utils import translation
from django.utils.translation import gettext

from agents.models import Agent
from agents.providers import provider_for
from agents.providers.base import ModelRequest, ProviderEvent, TextDelta, ToolCallRequest, Usage
from agents.providers.offline import OFFLINE_LABEL, OfflineProvider
from agents.registry import ToolResult, get_tool
from delegation.tree.delegate_tool import delegate_tool_schema

ALL_TOOLS = ["calculate", "current_time", "search_my_chats"]


def _request(text: str, tools: list[str] = ALL_TOOLS, **fields: Any) -> ModelRequest:
    return ModelRequest(
        model="",
        messages=[{"role": "user", "content": text}],
        tools=[get_tool(key).openai_schema() for key in tools],
        **fields,
    )


def _stream(request: ModelRequest) -> list[ProviderEvent]:
    return list(OfflineProvider().stream(request))


def _call(request: ModelRequest) -> tuple[str, dict[str, Any]] | None:
    """The one tool call the reply makes, or None when it answers in text."""
    calls = [e for e in _stream(request) if isinstance(e, ToolCallRequest)]
    assert len(calls) <= 1
    return (calls[0].name, json.loads(calls[0].arguments)) if calls else None


def _text(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _after_tool(
    name: str, arguments: dict[str, Any], content: dict[str, Any], question: str = "please"
) -> ModelRequest:
    """The request the runner sends once a tool has answered the model's call."""
    return ModelRequest(
        model="",
        tools=[get_tool(name).openai_schema()],
        messages=[
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(content)},
        ],
    )


def test_same_input_gives_the_same_output():
    for text in ["what is 6*7?", "hello there", "现在几点"]:
        assert _stream(_request(text)) == _stream(_request(text))


def test_calculates_the_expression_in_the_users_words():
    assert _call(_request("what is 6*7?")) == ("calculate", {"expression": "6*7"})


@pytest.mark.parametrize(
    ("words", "expression"),
    [
        ("What is (2 + 3) × 4 please", "(2 + 3) * 4"),
        ("计算 12÷4", "12/4"),
        ("tell me -3 + 4", "-3 + 4"),
    ],
)
def test_calculation_symbols_are_normalised(words, expression):
    assert _call(_request(words)) == ("calculate", {"expression": expression})


def test_does_not_calculate_when_the_tool_is_not_offered():
    request = _request("what is 6*7?", tools=["current_time"])

    events = _stream(request)

    assert not [e for e in events if isinstance(e, ToolCallRequest)]
    assert _text(events).startswith(OFFLINE_LABEL)


def test_numbers_without_an_operator_are_not_a_calculation():
    assert _call(_request("I have 3 cats")) is None


@pytest.mark.parametrize(
    "words", ["What time is it?", "What's the date today?", "现在几点？", "现在的时间是", "幾點了"]
)
def test_asks_for_the_current_time_in_english_and_chinese(words):
    assert _call(_request(words)) == ("current_time", {})


def test_no_time_call_when_current_time_is_not_offered():
    assert _call(_request("现在几点？", tools=["calculate"])) is None


def test_searches_chats_for_the_phrase_named():
    assert _call(_request("Search my chats for pizza recipes?")) == (
        "search_my_chats",
        {"query": "pizza recipes"},
    )


def test_tool_call_ends_with_usage_and_no_text():
    events = _stream(_request("what is 6*7?"))

    assert isinstance(events[0], ToolCallRequest)
    assert events[0].id.startswith("offline_")
    assert isinstance(events[-1], Usage)
    assert not [e for e in events if isinstance(e, TextDelta)]


def test_without_tools_it_says_it_is_offline_and_quotes_the_user():
    events = _stream(_request("hello there, robot", tools=[]))

    reply = _text(events)
    assert reply.startswith(OFFLINE_LABEL)
    assert "[offline model]" in reply
    assert "“hello there, robot”" in reply
    assert "I can use these tools" not in reply
    assert isinstance(events[-1], Usage)
    assert events[-1].completion_tokens == len([e for e in events if isinstance(e, TextDelta)])


def test_explanation_lists_the_offered_tools():
    reply = _text(_stream(_request("hello", tools=["current_time", "calculate"])))

    assert "I can use these tools: Calculate and Check the time." in reply  # never their keys


def test_a_long_message_is_quoted_shortened():
    reply = _text(_stream(_request("x" * 500, tools=[])))

    assert "“" + "x" * 200 + "…”" in reply
    assert "x" * 201 not in reply


def test_reply_streams_word_by_word():
    deltas = [e for e in _stream(_request("hello", tools=[])) if isinstance(e, TextDelta)]

    assert len(deltas) > 10
    assert all(len(d.text.split()) == 1 for d in deltas)


def test_summarizes_a_calculation_result():
    request = _after_tool(
        "calculate",
        {"expression": "6*7"},
        {"ok": True, "result": {"expression": "6*7", "value": 42}},
    )

    events = _stream(request)

    assert not [e for e in events if isinstance(e, ToolCallRequest)]
    assert _text(events) == f"{OFFLINE_LABEL} 6*7 = 42."


def test_summarizes_the_current_time():
    result = {
        "time": "09:30",
        "weekday": "Monday",
        "date": "2025-01-06",
        "timezone": "Asia/Taipei",
        "iso": "2025-01-06T09:30:00+08:00",
    }

    reply = _text(_stream(_after_tool("current_time", {}, {"ok": True, "result": result})))

    assert reply == f"{OFFLINE_LABEL} It is 09:30 on Monday, 2025-01-06 (Asia/Taipei)."


def test_describes_a_tool_error():
    request = _after_tool(
        "calculate",
        {"expression": "1/0"},
        {"ok": False, "error": {"code": "tool_error", "message": "Division by zero."}},
    )

    reply = _text(_stream(request))

    # The tool by the name people know it by, never its function name.
    assert reply == f"{OFFLINE_LABEL} The Calculate tool reported a problem: Division by zero."


def test_describes_a_result_cut_to_the_size_limit(settings):
    settings.TOOL_RESULT_MAX_CHARS = 100
    content = ToolResult(True, data={"matches": [{"text": "pizza " * 50}]}).as_content()

    reply = _text(_stream(_after_tool("search_my_chats", {"query": "pizza"}, json.loads(content))))

    assert reply.startswith(f"{OFFLINE_LABEL} The Search your chats tool returned: ")
    assert "pizza pizza" in reply
    assert "null" not in reply


def test_does_not_call_a_tool_again_after_its_result():
    request = _after_tool(
        "calculate",
        {"expression": "6*7"},
        {"ok": True, "result": {"expression": "6*7", "value": 42}},
        question="what is 6*7?",
    )

    assert _call(request) is None


def test_default_provider_resolves_to_offline_when_configured(settings):
    settings.DEFAULT_MODEL_PROVIDER = "offline"

    provider = provider_for("default")

    assert provider.name == "offline"
    assert _text(list(provider.stream(_request("hi", tools=[])))).startswith(OFFLINE_LABEL)


def test_default_provider_follows_the_setting(settings):
    settings.DEFAULT_MODEL_PROVIDER = "openai"

    assert provider_for("default").name == "openai"


PLANNERS = [
    Agent(name="tasks", display_name="Task expert", tags=["task", "任务"]),
    Agent(name="weather", display_name="Weather expert", tags=["weather", "天气"]),
    Agent(name="reminders", display_name="Reminder expert", tags=["remind", "提醒"]),
]


def _planner_request(text: str) -> ModelRequest:
    return ModelRequest(
        model="",
        messages=[{"role": "user", "content": text}],
        tools=[get_tool("current_time").openai_schema(), delegate_tool_schema(PLANNERS)],
    )


@pytest.mark.parametrize(
    "text", ["周末早上去机场接人", "Pick up Mum at the airport on Saturday morning", "明天送机"]
)
def test_an_errand_at_a_time_starts_with_the_task_expert(text):
    call = _call(_planner_request(text))
    assert call is not None and call[0] == "delegate" and call[1]["target"] == "tasks"
    assert call[1]["reason"] in (  # said in the language of the words
        "An errand, step 1 of 3 (task, weather, reminder), for Task expert.",
        "外出事务，第 1/3 步（任务、天气、提醒），交给 Task expert。",
    ), call[1]["reason"]


@pytest.mark.parametrize(
    "text",
    [
        "如何连接人工智能服务",  # 连接人工: not 接人
        "pick up where we left off tomorrow",
        "what time is it at the airport?",
        "去机场",  # no time: not a plan
    ],
)
def test_words_that_only_look_like_an_errand_do_not_start_a_plan(text):
    call = _call(_planner_request(text))
    assert call is None or call[0] != "delegate"


def test_a_tool_error_names_the_tool_in_the_users_language():
    request = _after_tool(
        "calculate",
        {"expression": "1/0"},
        {"ok": False, "error": {"code": "tool_error", "message": "除以零。"}},
        question="這個算式等於多少？",
    )

    with translation.override("zh-hant"):
        label = gettext("Calculate")
    reply = _text(_stream(request))

    assert label in reply and "calculate" not in reply


def test_a_result_that_says_what_it_did_is_said_in_its_words():
    request = _after_tool(
        "search_my_chats",
        {"query": "pizza"},
        {"ok": True, "result": {"matches": [], "message": "No chat mentions “pizza”."}},
    )

    reply = _text(_stream(request))

    assert reply == f"{OFFLINE_LABEL} No chat mentions “pizza”."


def _team_request(text: str) -> ModelRequest:
    finance = Agent(name="finance", display_name="Finance expert", tags=["finance", "財務", "报销"])
    return ModelRequest(
        model="",
        messages=[{"role": "user", "content": text}],
        tools=[get_tool("ask_human").openai_schema(), delegate_tool_schema([finance])],
    )


@pytest.mark.parametrize(
    "text", ["轉人工：我的財務報銷還沒下來", "escalate: my finance claim is late", "报销转人工"]
)
def test_an_explicit_request_for_a_person_wins_over_a_department_word(text):
    call = _call(_team_request(text))
    assert call is not None and call[0] == "ask_human", call


def test_department_words_alone_still_ask_the_expert():
    call = _call(_team_request("我的財務報銷還沒下來"))
    assert call is not None and call[0] == "delegate" and call[1]["target"] == "finance"
