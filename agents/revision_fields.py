"""Field-by-field differences between two agent revisions, for a coloured diff in admin."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from agents.models import AGENT_EDITABLE_FIELDS, Agent, AgentRevision


@dataclass
class FieldChange:
    """One changed field: scalars as old → new, lists as items removed/added/kept, text as
    lines with a diff mark each ('-', '+', ' ')."""

    name: str
    label: str
    kind: str  # "value", "list" or "text"
    old: str = ""
    new: str = ""
    items: list[tuple[str, str]] = field(default_factory=list)  # (mark, item)


def _label(name: str) -> str:
    try:
        return str(Agent._meta.get_field(name).verbose_name)
    except Exception:  # a key an older snapshot had and the model no longer has
        return name.replace("_", " ")


def _text(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _change(name: str, old: Any, new: Any) -> FieldChange:
    if isinstance(old, list) or isinstance(new, list):
        before, after = [_text(v) for v in old or []], [_text(v) for v in new or []]
        items = [("-", v) for v in before if v not in after]
        items += [("+", v) for v in after if v not in before]
        items += [(" ", v) for v in after if v in before]
        return FieldChange(name, _label(name), "list", items=items)
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        lines = [
            (line[0], line[2:])
            for line in difflib.ndiff(old.splitlines(), new.splitlines())
            if not line.startswith("?")
        ]
        return FieldChange(name, _label(name), "text", items=lines)
    return FieldChange(name, _label(name), "value", old=_text(old), new=_text(new))


def revision_field_diff(
    *, revision: AgentRevision, against: AgentRevision | None
) -> list[FieldChange]:
    """The fields that differ from `against` (None: every field set in `revision`), in the
    order admins edit them."""
    old = against.snapshot if against else {}
    new = revision.snapshot
    order = [*AGENT_EDITABLE_FIELDS, *sorted((set(old) | set(new)) - set(AGENT_EDITABLE_FIELDS))]
    changes = []
    for name in order:
        if name not in old and name not in new:
            continue
        before, after = old.get(name), new.get(name)
        if before == after or (against is None and after in (None, "", [], {})):
            continue
        changes.append(_change(name, before, after))
    return changes
