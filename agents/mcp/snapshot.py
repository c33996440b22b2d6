"""A server's tools in snapshot form, their definition hash, and what changed between two."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

FUNCTION_NAME_MAX = 64  # OpenAI's limit on a function name
DESCRIPTION_MAX = 2000  # of a server's tool description, kept and offered to models
NAME_MAX = 128  # a tool name longer than this is left out of the snapshot (McpTool.name)
TITLE_MAX = 200
_DEFINITION = ("description", "input_schema", "annotations")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def snapshot_of(tool: Any) -> dict[str, Any]:
    """One listed tool (the SDK's `Tool`) as the snapshot keeps it."""
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    )
    entry = {
        "name": tool.name,
        "title": (tool.title or annotations.get("title") or "")[:TITLE_MAX],
        "description": (tool.description or "")[:DESCRIPTION_MAX],
        "input_schema": tool.input_schema or {"type": "object"},
        "annotations": annotations,
    }
    return {**entry, "hash": definition_hash(entry)}


def definition_hash(entry: dict[str, Any]) -> str:
    """A hash of what a model is offered and how calls are governed (not of the title)."""
    definition = {k: entry[k] for k in ("name", "description", "input_schema", "annotations")}
    canonical = json.dumps(definition, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def schema_problem(schema: Any) -> str:
    """Why a tool's input schema cannot be used to check arguments ("" when it can)."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its input schema is not a JSON Schema of an object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is invalid: {exc.message}"
    return ""


def function_name(server: str, tool: str, taken: set[str]) -> str:
    """The function name a model calls the tool by: mcp__<server>__<tool>, made safe, at most
    64 characters, and not one of `taken`."""
    base = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    name = base[:FUNCTION_NAME_MAX]
    if name not in taken:
        return name
    suffix = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:8]
    return f"{base[: FUNCTION_NAME_MAX - 9]}_{suffix}"


def changes_between(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """What a listing changes in a snapshot: tools added, removed, and changed (with which
    parts of their definition changed)."""
    old = {t["name"]: t for t in before}
    new = {t["name"]: t for t in after}
    changed = []
    for name in sorted(old.keys() & new.keys()):
        if old[name]["hash"] != new[name]["hash"]:
            parts = [
                k
                for k in ("description", "input_schema", "annotations")
                if old[name][k] != new[name][k]
            ]
            changed.append({"name": name, "parts": parts, "before": old[name], "after": new[name]})
    return {
        "added": [new[n] for n in sorted(new.keys() - old.keys())],
        "removed": [old[n] for n in sorted(old.keys() - new.keys())],
        "changed": changed,
    }


def needs_approval(annotations: dict[str, Any]) -> bool:
    """The annotations' default: a tool not marked read-only (or marked destructive) waits for
    a staff member's approval."""
    return bool(annotations.get("destructiveHint")) or not annotations.get("readOnlyHint")


def safe_to_repeat(annotations: dict[str, Any]) -> bool:
    """Whether a call that may have run may be made again: read-only or idempotent tools."""
    return bool(annotations.get("readOnlyHint") or annotations.get("idempotentHint"))
