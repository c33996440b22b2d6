"""The OpenAPI schema's grouping: every operation tagged with its area by its URL, in one table,
so /api/docs/ lists Chat, Agents, Knowledge, Runs, … instead of one long "v1" list."""

from __future__ import annotations

import re
from typing import Any

# (area, what it holds, the first path segments after /api/v1/ that belong to it), in the order
# the docs page lists them.
AREAS: list[tuple[str, str, tuple[str, ...]]] = [
    ("Chat", "Sessions, messages, search, feedback and their event stream.", ("sessions",)),
    ("Runs", "A turn's runs: status, cancel, and a run's event stream.", ("runs",)),
    (
        "Agents",
        "Agent definitions, what the user may ask, and the tool registry.",
        ("agents", "tools"),
    ),
    ("Knowledge", "Knowledge bases and their documents.", ("knowledge-bases",)),
    ("Routing", "What routing remembers of a conversation.", ()),
    ("Inbox", "Questions and approvals waiting for staff.", ("inbox",)),
    ("Reviews", "Answers flagged for review.", ("reviews",)),
    ("Activity", "The activity log and the agents' states.", ("activity", "agent-states")),
    ("Reminders", "Tasks, reminders and scheduled prompts.", ("planner", "reminders", "tasks")),
    (
        "Watches",
        "The watches that check for the user, and their notification settings.",
        ("watches", "notifications"),
    ),
    ("Usage", "Model tokens and costs, per user and per turn.", ("usage",)),
    ("Evals", "Eval suites, cases, runs and agent drafts.", ("evals",)),
    (
        "MCP",
        "MCP servers, their tools and per-user connections.",
        ("mcp-servers", "mcp-connections"),
    ),
    ("Tokens", "The user's API tokens.", ("tokens",)),
]
_BY_SEGMENT = {segment: area for area, _about, segments in AREAS for segment in segments}
# Paths under another area's prefix that belong elsewhere.
_EXCEPTIONS = [(re.compile(r"^sessions/[^/]+/memory/"), "Routing")]
_PREFIX = re.compile(r"^/api/v\d+/")


def area_of(path: str) -> str:
    """The area of an API path ("/api/v1/sessions/{id}/" → "Chat"); an unknown first segment
    names its own area ("widgets" → "Widgets")."""
    rest = _PREFIX.sub("", path)
    for pattern, area in _EXCEPTIONS:
        if pattern.match(rest):
            return area
    segment = rest.split("/", 1)[0]
    return _BY_SEGMENT.get(segment) or segment.replace("-", " ").capitalize() or "API"


def tag_by_area(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: tag each operation with its area and list the
    areas (those in use) in the table's order, with what each holds."""
    used: set[str] = set()
    for path, operations in result.get("paths", {}).items():
        area = area_of(path)
        for operation in operations.values():
            if isinstance(operation, dict) and "responses" in operation:
                operation["tags"] = [area]
                used.add(area)
    known = [{"name": a, "description": about} for a, about, _s in AREAS if a in used]
    extra = [{"name": a} for a in sorted(used - {a for a, _about, _s in AREAS})]
    result["tags"] = known + extra
    return result
