"""The tool registry: what may be registered, who is offered what, and safe execution."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from jsonschema.exceptions import SchemaError

from agents import registry
from agents.registry import Tool, ToolContext, ToolError, ToolResult, execute, tool, tools_for
from tests.factories import make_user

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 1},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    },
    "required": ["count"],
    "additionalProperties": False,
}


def _echo(context: ToolContext, args: dict[str, Any]) -> Any:
    return {"user": getattr(context.user, "username", None), "args": args}


@pytest.fixture
def register_test_tool() -> Iterator[Callable[..., Tool]]:
    """Registers tools for one test and removes them afterwards, leaving the registry as it was."""
    added: list[str] = []

    def add(key: str, handler: Callable[..., Any] = _echo, **fields: Any) -> Tool:
        assert key.startswith("test_")
        added.append(key)
        return registry.register(
            Tool(key, f"{key} for tests", fields.pop("parameters", SCHEMA), handler, **fields)
        )

    yield add
    for key in added:
        registry._TOOLS.pop(key, None)


def _run(registered: Tool, arguments: Any, user: Any = None) -> ToolResult:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return execute(registered, ToolContext(user=user), raw)


def test_invalid_schema_cannot_be_registered():
    with pytest.raises(SchemaError):
        registry.register(Tool("test_bad_schema", "bad", {"type": "no-such-type"}, _echo))

    assert registry.get_tool("test_bad_schema") is None


def test_invalid_schema_fails_through_the_decorator_too():
    with pytest.raises(SchemaError):
        tool("test_bad_decorated", "bad", {"properties": {"n": {"minimum": "one"}}})(_echo)

    assert registry.get_tool("test_bad_decorated") is None


def test_duplicate_key_fails_and_keeps_the_first(register_test_tool):
    first = register_test_tool("test_dup")

    with pytest.raises(ValueError, match="test_dup"):
        registry.register(Tool("test_dup", "another", SCHEMA, _echo))

    assert registry.get_tool("test_dup") is first


def test_a_builtin_key_cannot_be_taken_over():
    builtin = registry.get_tool("calculate")

    with pytest.raises(ValueError):
        registry.register(Tool("calculate", "impostor", SCHEMA, _echo))

    assert registry.get_tool("calculate") is builtin


def test_registered_tool_is_listed_and_offered_in_openai_format(register_test_tool, db):
    registered = register_test_tool("test_listed")

    assert registered in registry.all_tools()
    assert registry.unknown_keys(["test_listed", "test_nowhere"]) == ["test_nowhere"]
    assert registered.openai_schema() == {
        "type": "function",
        "function": {
            "name": "test_listed",
            "description": "test_listed for tests",
            "parameters": SCHEMA,
        },
    }


def test_valid_arguments_reach_the_handler_with_the_user(register_test_tool, user):
    registered = register_test_tool("test_ok")

    result = _run(registered, {"count": 2, "items": [{"name": "a"}]}, user)

    assert result.ok
    assert result.data == {"user": "alice", "args": {"count": 2, "items": [{"name": "a"}]}}
    assert json.loads(result.as_content()) == {"ok": True, "result": result.data}


def test_non_json_arguments(register_test_tool):
    result = _run(register_test_tool("test_json"), "{count: 2")

    assert not result.ok
    assert result.error_code == "invalid_json"
    assert json.loads(result.as_content())["error"]["code"] == "invalid_json"


def test_arguments_must_be_an_object(register_test_tool):
    result = _run(register_test_tool("test_object"), "[1, 2]")

    assert (result.ok, result.error_code) == (False, "invalid_arguments")


def test_missing_required_field(register_test_tool):
    result = _run(register_test_tool("test_required"), {})

    assert result.error_code == "invalid_arguments"
    assert "'count' is a required property" in result.error


def test_no_arguments_at_all_are_checked_as_an_empty_object(register_test_tool):
    result = _run(register_test_tool("test_empty"), "")

    assert result.error_code == "invalid_arguments"
    assert "count" in result.error


def test_wrong_type_names_the_field(register_test_tool):
    result = _run(register_test_tool("test_type"), {"count": "two"})

    assert result.error_code == "invalid_arguments"
    assert result.error.startswith("count: ")
    assert "'two' is not of type 'integer'" in result.error


def test_nested_problem_names_the_full_path(register_test_tool):
    result = _run(register_test_tool("test_nested"), {"count": 1, "items": [{"name": "a"}, {}]})

    assert result.error_code == "invalid_arguments"
    assert result.error.startswith("items/1: ")
    assert "'name' is a required property" in result.error


def test_unexpected_field_is_rejected(register_test_tool):
    result = _run(register_test_tool("test_extra"), {"count": 1, "sneaky": True})

    assert result.error_code == "invalid_arguments"
    assert "'sneaky' was unexpected" in result.error


def test_handler_is_not_called_with_invalid_arguments(register_test_tool):
    calls: list[dict[str, Any]] = []
    registered = register_test_tool("test_guarded", lambda c, a: calls.append(a))

    _run(registered, {"count": 0})

    assert calls == []


def test_tool_error_is_passed_to_the_model(register_test_tool):
    def refuse(context: ToolContext, args: dict[str, Any]) -> Any:
        raise ToolError("No such order: 17.")

    result = _run(register_test_tool("test_refuse", refuse), {"count": 1})

    assert (result.ok, result.error_code, result.error) == (
        False,
        "tool_error",
        "No such order: 17.",
    )
    assert json.loads(result.as_content()) == {
        "ok": False,
        "error": {"code": "tool_error", "message": "No such order: 17."},
    }


def test_unexpected_exception_is_generic_and_leaks_nothing(register_test_tool, caplog):
    def crash(context: ToolContext, args: dict[str, Any]) -> Any:
        raise RuntimeError("password=hunter2 at /srv/app/secret.py")

    result = _run(register_test_tool("test_crash", crash), {"count": 1})

    assert (result.ok, result.error_code) == (False, "tool_failed")
    content = result.as_content()
    for leaked in ("hunter2", "secret.py", "Traceback", "RuntimeError"):
        assert leaked not in result.error
        assert leaked not in content
    assert "test_crash failed" in caplog.text  # operators still get the details in the log


def test_large_result_is_truncated(register_test_tool, settings):
    settings.TOOL_RESULT_MAX_CHARS = 200
    registered = register_test_tool("test_big", lambda c, a: "x" * 1000 + "END")

    content = _run(registered, {"count": 1}).as_content()

    body = json.loads(content)
    assert body["ok"] is True
    assert body["truncated"] is True
    assert len(body["text"]) == 200
    assert body["text"].startswith('{"ok": true, "result": "xxx')
    assert "END" not in content


def test_what_people_are_shown_of_a_large_result_is_bounded_as_the_models_copy(
    register_test_tool, settings
):
    settings.TOOL_RESULT_MAX_CHARS = 200
    big = register_test_tool("test_big", lambda c, a: {"rows": ["x" * 1000, "END"]})
    shown = _run(big, {"count": 1}).as_shown()
    assert shown["ok"] is True and shown["truncated"] is True
    assert (
        shown["result"] == json.dumps({"ok": True, "result": {"rows": ["x" * 1000, "END"]}})[:200]
    )
    small = register_test_tool("test_small", lambda c, a: {"rows": ["a"]})
    assert _run(small, {"count": 1}).as_shown() == {"ok": True, "result": {"rows": ["a"]}}


def test_truncated_non_ascii_result_stays_near_the_limit(register_test_tool, settings):
    settings.TOOL_RESULT_MAX_CHARS = 200
    registered = register_test_tool("test_big_zh", lambda c, a: "会议记录" * 300)

    content = _run(registered, {"count": 1}).as_content()

    assert json.loads(content)["truncated"] is True
    assert len(content) < 200 + 60


def test_result_within_the_limit_is_whole(register_test_tool, settings):
    settings.TOOL_RESULT_MAX_CHARS = 200
    registered = register_test_tool("test_small", lambda c, a: "y" * 100)

    assert json.loads(_run(registered, {"count": 1}).as_content()) == {
        "ok": True,
        "result": "y" * 100,
    }


def test_tools_for_skips_unknown_keys_and_keeps_order(register_test_tool, user, caplog):
    first = register_test_tool("test_first")
    second = register_test_tool("test_second")

    found = tools_for(["test_second", "test_gone", "test_first"], user)

    assert found == [second, first]
    assert "test_gone" in caplog.text


def test_tools_for_hides_tools_the_user_lacks_permission_for(register_test_tool, user):
    register_test_tool("test_guarded_perm", permission="chat.delete_chatsession")
    open_tool = register_test_tool("test_open")

    assert tools_for(["test_guarded_perm", "test_open"], user) == [open_tool]
    assert tools_for(["test_guarded_perm", "test_open"], None) == [open_tool]


def test_tools_for_offers_the_tool_once_the_permission_is_granted(register_test_tool, db):
    guarded = register_test_tool("test_granted", permission="chat.delete_chatsession")
    grantee = make_user("grantee")
    grantee.user_permissions.add(
        Permission.objects.get(codename="delete_chatsession", content_type__app_label="chat")
    )
    grantee = type(grantee).objects.get(pk=grantee.pk)  # a fresh permission cache

    assert tools_for(["test_granted"], grantee) == [guarded]
