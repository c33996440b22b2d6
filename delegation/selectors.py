"""Reads of runs: a turn's delegation tree in the order it unfolded."""

from __future__ import annotations

from django.db.models import Q

from delegation.models import Run


def run_tree(*, run: Run) -> list[Run]:
    """Every run of the turn `run` belongs to, depth first (each caller before its experts)."""
    root_id = run.root_id_or_self
    runs = list(
        Run.objects.filter(Q(pk=root_id) | Q(root_id=root_id))
        .select_related("agent", "user")
        .order_by("created_at")
    )
    children: dict[object, list[Run]] = {}
    for item in runs:
        children.setdefault(item.parent_id, []).append(item)
    ordered: list[Run] = []
    stack = [r for r in reversed(children.get(None, []))]
    while stack:
        current = stack.pop()
        ordered.append(current)
        stack.extend(reversed(children.get(current.id, [])))
    return ordered
