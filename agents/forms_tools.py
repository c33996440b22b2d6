"""The agent form's tool picker: every tool an agent may be given (code, MCP servers, linked
knowledge) in one list with its human title and description, a tick to give it and a "needs
approval" toggle; without script it is a plain list of checkboxes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from agents.knowledge.tools import KNOWLEDGE_TOOL_KEYS, knowledge_tool_keys_for
from agents.registry import Tool, all_tools


def tool_choices() -> list[tuple[str, str]]:
    """Registry tools as (key, title) choices: what the form accepts."""
    return [(t.key, tool_title(t)) for t in all_tools()]


def tool_title(tool: Tool) -> str:
    """The tool's short human name (its key when it has none)."""
    return str(tool.title) if tool.title else tool.key


@dataclass
class ToolRow:
    """One tool as the picker lists it."""

    key: str
    title: str
    description: str
    badges: list[str] = field(default_factory=list)
    note: str = ""
    stale: bool = False


def tool_rows(*, agent: Any, stale: list[str]) -> list[ToolRow]:
    """Every registered tool, then the agent's stale keys, with what an admin should know of
    each: it changes data, it always waits for approval, it reaches outside, it comes with the
    agent's linked knowledge bases."""
    linked = knowledge_tool_keys_for(agent) if agent is not None and agent.pk else []
    kb_names = [str(kb) for kb in agent.knowledge_bases.all()] if linked else []
    rows = []
    for tool in all_tools():
        badges = []
        if tool.side_effect:
            badges.append(gettext("changes data"))
        if tool.approval:
            badges.append(gettext("always needs approval"))
        if tool.key.startswith("mcp."):
            badges.append(gettext("MCP server"))
        elif tool.outside:
            badges.append(gettext("reaches outside"))
        note = ""
        if tool.key in KNOWLEDGE_TOOL_KEYS:
            badges.append(gettext("knowledge"))
            note = (
                gettext("Given by the linked knowledge bases: %(names)s.")
                % {"names": ", ".join(kb_names)}
                if tool.key in linked
                else gettext("Given automatically when a knowledge base is linked to the agent.")
            )
        rows.append(ToolRow(tool.key, tool_title(tool), tool.description, badges, note))
    for key in stale:
        rows.append(
            ToolRow(
                key,
                key,
                gettext("Removed from code: skipped at run time. Saving removes it unless ticked."),
                [gettext("removed from code")],
                stale=True,
            )
        )
    return rows


class ToolPicker(forms.CheckboxSelectMultiple):
    """Tools as one list: a tick gives the tool, a toggle makes its calls wait for approval.

    The form sets `rows` (ToolRow list) and `approval` ({"keys": [...], "on": bool}; empty when
    the form has no approval fields). The toggles post `approval_tool_keys` and the switch above
    them `require_approval`, the model's own fields, so validation stays where it is."""

    rows: list[ToolRow]
    approval: dict[str, Any]

    def __init__(self, attrs: dict[str, Any] | None = None, choices: Any = ()) -> None:
        super().__init__(attrs, choices)
        self.rows = []
        self.approval = {}

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        """The picker's HTML: search box (used by the script), switch, and one row per tool."""
        chosen = {str(v) for v in (value or [])}
        approvals = set(self.approval.get("keys", []))
        rows = self.rows or [ToolRow(k, str(label), "") for k, label in self.choices]
        ordered = sorted(rows, key=lambda r: (r.key not in chosen, r.title.lower(), r.key))
        base_id = (attrs or {}).get("id") or f"id_{name}"
        context = {
            "name": name,
            "id": base_id,
            "rows": [
                {
                    "row": row,
                    "index": i,
                    "checked": row.key in chosen,
                    "needs_approval": row.key in approvals,
                }
                for i, row in enumerate(ordered)
            ],
            "approval": bool(self.approval),
            "approval_on": self.approval.get("on", False),
            "chosen": len(chosen),
            "total": len(ordered),
        }
        return render_to_string("admin/agents/agent/tool_picker.html", context)
