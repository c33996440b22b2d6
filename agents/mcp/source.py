"""The MCP snapshots as a source of the tool registry: keys `mcp.<server>.<tool>`.

A tool is usable while its server is enabled and its snapshot entry active; a registry Tool is
built once per definition and process (checking a schema costs more than reading a row).
"""

from __future__ import annotations

import json
from functools import partial

from django.utils import translation
from django.utils.functional import lazy

from agents.mcp.calls import mcp_call
from agents.mcp.models import McpTool, ToolStatus
from agents.mcp.snapshot import safe_to_repeat, schema_problem
from agents.registry import Tool

PREFIX = "mcp."
_BUILT: dict[tuple[int, str, str, str, str, str, str], Tool] = {}


class McpSource:
    """Answers the registry for `mcp.` keys from the snapshot rows."""

    def tool(self, key: str) -> Tool | None:
        """The usable tool with this key, or None."""
        found = self.tools([key])
        return found[0] if found else None

    def tools(self, keys: list[str] | None = None) -> list[Tool]:
        """The usable tools (of `keys`, or all of them)."""
        rows = [r for r in _rows(keys) if r.status == ToolStatus.ACTIVE and r.server.enabled]
        return [t for t in (_built(row) for row in rows) if t is not None]

    def problems(self, keys: list[str]) -> dict[str, str]:
        """Why each of `keys` that is not usable is not."""
        rows = {row.key: row for row in _rows(keys)}
        problems = {}
        for key in keys:
            row = rows.get(key)
            if row is None:
                problems[key] = "unknown"
            elif not row.server.enabled:
                problems[key] = f"its MCP server {row.server.name} is disabled"
            elif row.status == ToolStatus.HELD:
                problems[key] = "it changed on its MCP server: an admin must accept the change"
            elif row.status == ToolStatus.REMOVED:
                problems[key] = "its MCP server no longer lists it"
            elif _built(row) is None:
                problems[key] = schema_problem(row.input_schema)
        return problems


def _rows(keys: list[str] | None) -> list[McpTool]:
    """The snapshot rows of `keys` (None: all), with their servers."""
    rows = McpTool.objects.select_related("server")
    if keys is None:
        return list(rows)
    pairs = {tuple(key[len(PREFIX) :].split(".", 1)) for key in keys if key.startswith(PREFIX)}
    pairs = {p for p in pairs if len(p) == 2}
    if not pairs:
        return []
    rows = rows.filter(server__name__in={p[0] for p in pairs}, name__in={p[1] for p in pairs})
    return [row for row in rows if (row.server.name, row.name) in pairs]


def _built(row: McpTool) -> Tool | None:
    """The registry Tool of a snapshot row (None: its schema cannot check arguments)."""
    cache_key = (
        row.pk,
        row.definition_hash,
        row.approval,
        row.title,
        row.server.name,
        row.server.display_name,
        json.dumps(row.server.display_names or {}, sort_keys=True),
    )
    built = _BUILT.get(cache_key)
    if built is None:
        if schema_problem(row.input_schema):
            return None
        built = _BUILT[cache_key] = _tool_of(row)
    return built


def _tool_of(row: McpTool) -> Tool:
    read_only = bool(row.annotations.get("readOnlyHint"))
    description = f"{row.description or row.title or row.name} (MCP: {row.server.display_name})"
    return Tool(
        row.key,
        description,
        row.input_schema,
        partial(mcp_call, tool_id=row.pk),
        side_effect=not read_only,
        approval=row.needs_approval,
        repeatable=safe_to_repeat(row.annotations),
        outside=True,
        function_name=row.function_name,
        title=lazy(partial(_title, row), str)(),
        summarize=partial(_summarized, row),
    )


SAID_CHARS = 160  # how much of what the server said a chip shows


def _summarized(row: McpTool, arguments: dict[str, object], result: object) -> str:
    """ "Finance ledger: Close the month: closed 12 entries": the tool and the first line of
    what its server said (its structured `summary`, else its text), shown as plain text."""
    if not isinstance(result, dict):
        return ""
    structured = result.get("structured")
    said = structured.get("summary") if isinstance(structured, dict) else None
    if not isinstance(said, str) or not said.strip():
        said = str(result.get("text") or "")
    first = next((line.strip() for line in said.splitlines() if line.strip()), "")
    if not first:
        return ""
    cut = first if len(first) <= SAID_CHARS else f"{first[: SAID_CHARS - 1]}…"
    return f"{_title(row)}: {cut}"


def _title(row: McpTool) -> str:
    """The tool as people read it, in the active language: its server's name there and the
    snapshot's title (or annotations' title, or its name humanised)."""
    server = row.server.name_in(translation.get_language())
    own = row.title or str(row.annotations.get("title") or "")
    return f"{server}: {own or row.name.replace('_', ' ').capitalize()}"


SOURCE = McpSource()
