"""What an eval case may expect, and the rules a case must pass before it is saved."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_noop
from jsonschema import Draft202012Validator

from agents.models import Agent
from agents.registry import get_tool
from delegation.routing.models import Mode
from delegation.runs.transcript import DELEGATE

# Each expectation, in the order reports list them, with its label.
# Kept in English with each verdict; pages show gettext(LABELS[key]) (selectors.result_rows).
LABELS: dict[str, str] = {
    "mode": gettext_noop("routed mode"),
    "experts": gettext_noop("experts asked"),
    "tools_called": gettext_noop("tools called"),
    "tools_not_called": gettext_noop("tools not called"),
    "no_tools": gettext_noop("no tool"),
    "tool_arguments": gettext_noop("tool arguments"),
    "answer_contains": gettext_noop("answer contains"),
    "answer_not_contains": gettext_noop("answer does not contain"),
    "answer_regex": gettext_noop("answer matches"),
    "cited_documents": gettext_noop("cites documents"),
    "max_model_calls": gettext_noop("max model calls"),
    "max_latency_seconds": gettext_noop("max latency"),
    "max_cost": gettext_noop("max cost"),
    "rubric": gettext_noop("rubric"),
    "human": gettext_noop("waits for a person"),
}
EXPERT_MATCHES = ("set", "ordered", "includes")
MAX_REGEX_CHARS = 500

_STRINGS = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 500}}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": list(Mode.values)},
        "experts": {
            "type": "object",
            "additionalProperties": False,
            "required": ["names"],
            "properties": {
                "names": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "match": {"enum": list(EXPERT_MATCHES)},
            },
        },
        "tools_called": {**_STRINGS, "minItems": 1},
        "tools_not_called": {**_STRINGS, "minItems": 1},
        "no_tools": {"const": True},
        "tool_arguments": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["tool", "arguments"],
                "properties": {
                    "tool": {"type": "string", "minLength": 1},
                    "arguments": {"type": "object"},
                },
            },
        },
        "answer_contains": {**_STRINGS, "minItems": 1},
        "answer_not_contains": {**_STRINGS, "minItems": 1},
        "answer_regex": {"type": "string", "minLength": 1, "maxLength": MAX_REGEX_CHARS},
        "cited_documents": {**_STRINGS, "minItems": 1},
        "max_model_calls": {"type": "integer", "minimum": 1, "maximum": 1000},
        "max_latency_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
        "max_cost": {"type": ["string", "number"]},
        "rubric": {"type": "string", "minLength": 1, "maxLength": 4000},
        # How the turn's waits for a person are decided (it must wait at least once).
        "human": {
            "type": "object",
            "additionalProperties": False,
            "required": ["decision"],
            "properties": {
                "decision": {"enum": ["approve", "reject"]},
                "answer": {"type": "string", "minLength": 1, "maxLength": 4000},
            },
        },
    },
}
_VALIDATOR = Draft202012Validator(SCHEMA)


def expectations_clean(expect: Any) -> dict[str, Any]:
    """The expectations in their stored form; ValidationError keyed by expectation otherwise.

    Tools must be registered (or `delegate`), experts must be agents, the regex must compile
    and the max cost must be a non-negative amount.
    """
    if not isinstance(expect, dict):
        raise ValidationError({"expect": ["Expectations are a JSON object."]})
    problems = sorted(_VALIDATOR.iter_errors(expect), key=lambda e: list(e.path))
    if problems:
        errors: dict[str, list[str]] = {}
        for problem in problems:
            key = str(problem.path[0]) if problem.path else "expect"
            errors.setdefault(key, []).append(problem.message)
        raise ValidationError(errors)
    errors = _semantic_errors(expect)
    if errors:
        raise ValidationError(errors)
    cleaned = dict(expect)
    if "max_cost" in cleaned:
        cleaned["max_cost"] = str(Decimal(str(cleaned["max_cost"])))
    if "experts" in cleaned:
        cleaned["experts"] = {"match": "set", **cleaned["experts"]}
    return {key: cleaned[key] for key in LABELS if key in cleaned}


def _semantic_errors(expect: dict[str, Any]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for key in ("tools_called", "tools_not_called"):
        unknown = [k for k in expect.get(key, []) if k != DELEGATE and get_tool(k) is None]
        if unknown:
            errors[key] = [f"No tool is registered as {', '.join(unknown)}."]
    unknown = [
        item["tool"]
        for item in expect.get("tool_arguments", [])
        if item["tool"] != DELEGATE and get_tool(item["tool"]) is None
    ]
    if unknown:
        errors["tool_arguments"] = [f"No tool is registered as {', '.join(unknown)}."]
    names = (expect.get("experts") or {}).get("names", [])
    missing = sorted(
        set(names) - set(Agent.objects.filter(name__in=names).values_list("name", flat=True))
    )
    if missing:
        errors["experts"] = [f"No agent is named {', '.join(missing)}."]
    if "answer_regex" in expect:
        try:
            re.compile(expect["answer_regex"])
        except re.error as exc:
            errors["answer_regex"] = [f"Not a regular expression: {exc}."]
    if "max_cost" in expect:
        try:
            amount = Decimal(str(expect["max_cost"]))
        except InvalidOperation:
            amount = Decimal(-1)
        if not amount.is_finite() or amount < 0:
            errors["max_cost"] = ["An amount of 0 or more, e.g. 0.05."]
    return errors


def prior_turns_clean(turns: Any) -> list[dict[str, str]]:
    """Earlier turns as [{"user", "assistant"}], both non-empty text; ValidationError otherwise."""
    message = 'Earlier turns are a list of {"user": "…", "assistant": "…"}.'
    if not isinstance(turns, list):
        raise ValidationError({"prior_turns": [message]})
    for turn in turns:
        if not (
            isinstance(turn, dict)
            and set(turn) == {"user", "assistant"}
            and all(isinstance(v, str) and v.strip() for v in turn.values())
        ):
            raise ValidationError({"prior_turns": [message]})
    return [{"user": t["user"].strip(), "assistant": t["assistant"].strip()} for t in turns]


FLAGS = ("force_strict", "force_guide")


def flags_clean(flags: Any) -> dict[str, bool]:
    """Routing flags: force_strict and/or force_guide, as true/false."""
    if not isinstance(flags, dict) or not all(
        k in FLAGS and isinstance(v, bool) for k, v in flags.items()
    ):
        raise ValidationError(
            {"flags": [f"Flags are an object of true/false among: {', '.join(FLAGS)}."]}
        )
    if flags.get("force_strict") and flags.get("force_guide"):
        raise ValidationError({"flags": ["force_strict and force_guide exclude each other."]})
    return {k: v for k, v in flags.items() if v}


def permissions_clean(permissions: Any) -> list[str]:
    """Permission names ("app_label.codename") that exist."""
    if not isinstance(permissions, list) or not all(isinstance(p, str) for p in permissions):
        raise ValidationError({"user_permissions": ['A list such as ["reminders.view_task"].']})
    missing = [p for p in permissions if permission_of(p) is None]
    if missing:
        raise ValidationError({"user_permissions": [f"No such permission: {', '.join(missing)}."]})
    return sorted(set(permissions))


def permission_of(name: str) -> Permission | None:
    """The permission named "app_label.codename", or None."""
    app_label, _, codename = name.partition(".")
    return Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()


def timezone_clean(name: str) -> str:
    """An IANA timezone name (or blank)."""
    if name:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValidationError(
                {"user_timezone": [f"{name!r} is not an IANA timezone."]}
            ) from None
    return name
