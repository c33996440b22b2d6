"""Questions about a run's transcript: which tool calls still wait for a result, and whether
the run asked an expert."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from delegation.models import Run

DELEGATE = "delegate"  # the delegate tool's name (delegation.tree.delegate_tool)


def pending_tool_calls(transcript: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Tool calls of the last assistant message that have no result yet, with their index."""
    for position in range(len(transcript) - 1, -1, -1):
        message = transcript[position]
        if message["role"] == "assistant":
            answered = {m.get("tool_call_id") for m in transcript[position + 1 :]}
            calls = message.get("tool_calls") or []
            return [(i, c) for i, c in enumerate(calls) if c["id"] not in answered]
    return []


def asked_an_expert(run: Run) -> bool:
    """Whether the run's transcript has a delegate call (True when the transcript was not
    read: it cannot say no)."""
    if "transcript" in run.get_deferred_fields():
        return True
    calls = [call for entry in run.transcript for call in entry.get("tool_calls") or ()]
    return _delegates(calls)


def awaits_an_expert(run: Run) -> bool:
    """Whether the run's last step has a delegate call still without its result: only then can
    experts of it be working (True when the transcript was not read: it cannot say no)."""
    if "transcript" in run.get_deferred_fields():
        return True
    return _delegates([call for _, call in pending_tool_calls(run.transcript)])


def _delegates(calls: list[dict[str, Any]]) -> bool:
    return any(call["function"]["name"] == DELEGATE for call in calls)


def arguments_shown(raw: str) -> Any:
    """A tool call's arguments as people are shown them: parsed when they are JSON, else the
    model's raw text; past TOOL_RESULT_MAX_CHARS, the first that many characters of the text
    (a model can write megabytes of arguments; events and the saved message stay bounded)."""
    if len(raw) > settings.TOOL_RESULT_MAX_CHARS:
        return raw[: settings.TOOL_RESULT_MAX_CHARS]
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw
