"""The delegation map: who may delegate to whom, and what is wrong with it (pure reads)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

from agents.models import Agent


@dataclass
class MapNode:
    """One agent on the map: its limits, access and tools, and its layer from the entry."""

    name: str
    display_name: str
    is_entry: bool
    enabled: bool
    delegatable: bool
    max_depth: int
    access: str
    tools: list[str]
    experts: list[str]
    described: bool = True
    tagged: bool = True
    layer: int | None = None  # hops from the entry agent; None: nothing reaches it
    warnings: list[str] = field(default_factory=list)


@dataclass
class DelegationMap:
    """Every agent as a node, every allowed delegation as an edge, and the map's warnings."""

    nodes: dict[str, MapNode]
    edges: list[tuple[str, str]]
    cycle_edges: set[tuple[str, str]]
    cap: int
    warnings: list[str]


def _access(agent: Agent) -> str:
    parts = []
    if agent.access_group_id:
        parts.append(f"group {agent.access_group.name}")
    if agent.access_permission:
        parts.append(f"perm {agent.access_permission}")
    return ", ".join(parts) or "everyone"


def _node(agent: Agent) -> MapNode:
    return MapNode(
        name=agent.name,
        display_name=agent.display_name or agent.name,
        is_entry=agent.is_entry,
        enabled=agent.enabled,
        delegatable=agent.delegatable,
        max_depth=agent.max_depth,
        access=_access(agent),
        tools=list(agent.tool_keys or []),
        experts=sorted(a.name for a in agent.allowed_subagents.all()),
        described=bool((agent.description or "").strip()),
        tagged=bool(agent.tags),
    )


def _cycle_edges(nodes: dict[str, MapNode]) -> set[tuple[str, str]]:
    """Edges that lie on a cycle: both ends in one strongly connected component (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, int] = {}

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for nxt in nodes[name].experts:
            if nxt not in index:
                visit(nxt)
                low[name] = min(low[name], low[nxt])
            elif nxt in on_stack:
                low[name] = min(low[name], index[nxt])
        if low[name] == index[name]:
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component[top] = index[name]
                if top == name:
                    break

    for name in nodes:
        if name not in index:
            visit(name)
    return {
        (a, b) for a, node in nodes.items() for b in node.experts if component[a] == component[b]
    }


def _layers(nodes: dict[str, MapNode]) -> None:
    """Hops from the entry agent through experts that can take a delegation."""
    frontier = [n.name for n in nodes.values() if n.is_entry and n.enabled]
    for name in frontier:
        nodes[name].layer = 0
    while frontier:
        following = []
        for name in frontier:
            for nxt in nodes[name].experts:
                target = nodes[nxt]
                if target.layer is None and target.enabled and target.delegatable:
                    target.layer = nodes[name].layer + 1  # type: ignore[operator]
                    following.append(nxt)
        frontier = following


def map_build(*, agents: Iterable[Agent], cap: int) -> DelegationMap:
    """The map of these agents (allowed_subagents and access_group prefetched) under `cap`."""
    nodes = {a.name: _node(a) for a in agents}
    for node in nodes.values():
        node.experts = [e for e in node.experts if e in nodes]
    edges = [(a, b) for a, node in nodes.items() for b in node.experts]
    cycles = _cycle_edges(nodes)
    _layers(nodes)
    warnings: list[str] = []
    if not any(n.is_entry and n.enabled for n in nodes.values()):
        warnings.append("No enabled entry agent: users have no agent to talk to.")
    experts = {b for _, b in edges}
    for node in nodes.values():
        _node_warnings(node, cycles=cycles, cap=cap, is_expert=node.name in experts)
        warnings.extend(f"{node.display_name}: {w}" for w in node.warnings)
    return DelegationMap(nodes=nodes, edges=edges, cycle_edges=cycles, cap=cap, warnings=warnings)


def _node_warnings(
    node: MapNode, *, cycles: set[tuple[str, str]], cap: int, is_expert: bool
) -> None:
    looped = sorted(b for a, b in cycles if a == node.name)
    if looped:
        node.warnings.append(
            f"delegation cycle via {', '.join(looped)} (the guards refuse an agent already "
            "on the path, so part of the loop is never used)."
        )
    if node.layer is None and node.enabled:
        node.warnings.append("nothing reaches it: no path from the entry agent.")
    if node.max_depth > cap:
        node.warnings.append(
            f"max depth {node.max_depth} is above the global cap DELEGATION_MAX_DEPTH={cap}; "
            f"chains stop at {cap}."
        )
    if is_expert and not node.is_entry:
        missing = [
            w for w, ok in (("description", node.described), ("tags", node.tagged)) if not ok
        ]
        if missing:
            node.warnings.append(
                f"expert without {' or '.join(missing)}: the router cannot choose it."
            )


def agent_map(*, cap: int | None = None) -> DelegationMap:
    """The map of every agent in the database, under the global depth cap."""
    agents = Agent.objects.select_related("access_group").prefetch_related("allowed_subagents")
    return map_build(agents=agents, cap=settings.DELEGATION_MAX_DEPTH if cap is None else cap)


def agent_map_warnings(*, agent: Agent) -> list[str]:
    """The map's warnings about one agent (for its change form)."""
    node = agent_map().nodes.get(agent.name)
    return list(node.warnings) if node else []
