"""The `delegate` tool: built per run from the targets the caller may use now."""

from __future__ import annotations

import json
from typing import Any

from agents.models import Agent
from delegation.runs.transcript import DELEGATE


def delegate_tool_schema(targets: list[Agent]) -> dict[str, Any]:
    """The OpenAI tool entry: target as an enum, with each target's description and tags (its
    name as the turn's user reads it: the model says it to them)."""
    lines = [
        f"- {a.name} ({a.name_in()}): {a.description or 'no description'}"
        + (f" Tags: {', '.join(a.tags)}." if a.tags else "")
        for a in targets
    ]
    description = (
        "Ask an expert agent to do a task and wait for its answer. Call it several times in one "
        "step to ask several experts in parallel. Experts:\n" + "\n".join(lines)
    )
    return {
        "type": "function",
        "function": {
            "name": DELEGATE,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "target": {
                        "type": "string",
                        "enum": [a.name for a in targets],
                        "description": "Which expert to ask.",
                    },
                    "task": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 8000,
                        "description": "What the expert should do, self-contained.",
                    },
                    "context": {
                        "type": "object",
                        "description": "Optional structured facts the expert needs.",
                    },
                    "reason": {
                        "type": "string",
                        "maxLength": 500,
                        "description": "Why this expert, in one sentence (kept in the "
                        "delegation record and shown to admins).",
                    },
                },
                "required": ["target", "task", "reason"],
                "additionalProperties": False,
            },
        },
    }


def delegate_arguments(raw: str) -> dict[str, Any]:
    """Parse the model's delegate arguments; ValueError with a reason the model can fix."""
    try:
        arguments = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"Arguments are not JSON: {exc}") from exc
    if not isinstance(arguments, dict):
        raise ValueError("Arguments must be an object.")
    target, task = arguments.get("target"), arguments.get("task")
    if not isinstance(target, str) or not target:
        raise ValueError("'target' must name an expert.")
    if not isinstance(task, str) or not task.strip():
        raise ValueError("'task' must say what the expert should do.")
    context = arguments.get("context")
    if context is not None and not isinstance(context, dict):
        raise ValueError("'context' must be an object.")
    reason = arguments.get("reason") if isinstance(arguments.get("reason"), str) else ""
    return {"target": target, "task": task.strip()[:8000], "context": context, "reason": reason}


def child_prompt(task: str, context: dict[str, Any] | None) -> str:
    """The first user message of a child run."""
    if not context:
        return task
    return f"{task}\n\nContext:\n{json.dumps(context, ensure_ascii=False, indent=2)}"
