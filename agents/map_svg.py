"""Lays the delegation map out as a server-rendered SVG (no script; colours from admin's theme)."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents.map import DelegationMap, MapNode

WIDTH, HEIGHT, GAP_X, GAP_Y, PAD = 212, 104, 56, 28, 16
LINE = 16


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def map_positions(dmap: DelegationMap) -> dict[str, tuple[int, int]]:
    """Top-left corner of each node: one column per layer from the entry; unreached last."""
    last = max((n.layer for n in dmap.nodes.values() if n.layer is not None), default=-1) + 1
    columns: dict[int, list[MapNode]] = {}
    for node in dmap.nodes.values():
        columns.setdefault(last if node.layer is None else node.layer, []).append(node)
    positions = {}
    for column, nodes in sorted(columns.items()):
        nodes.sort(key=lambda n: (not n.is_entry, n.name))
        for row, node in enumerate(nodes):
            positions[node.name] = (
                PAD + column * (WIDTH + GAP_X),
                PAD + row * (HEIGHT + GAP_Y),
            )
    return positions


def _edge(start: tuple[int, int], end: tuple[int, int], looped: bool) -> str:
    (x1, y1), (x2, y2) = start, end
    if x2 > x1:  # forward: right side to left side
        a, b = (x1 + WIDTH, y1 + HEIGHT // 2), (x2, y2 + HEIGHT // 2)
        bend = (b[0] - a[0]) // 2
        d = f"M{a[0]},{a[1]} C{a[0] + bend},{a[1]} {b[0] - bend},{b[1]} {b[0]},{b[1]}"
    else:  # backward or same column: bottom to bottom, under the boxes
        a, b = (x1 + WIDTH // 2 + 10, y1 + HEIGHT), (x2 + WIDTH // 2 - 10, y2 + HEIGHT)
        low = max(a[1], b[1]) + GAP_Y - 6
        d = f"M{a[0]},{a[1]} C{a[0]},{low} {b[0]},{low} {b[0]},{b[1]}"
    colour = "var(--error-fg, #ba2121)" if looped else "var(--body-quiet-color, #666)"
    dash = "stroke-dasharray:6 4;" if looped else ""
    marker = "arrow-loop" if looped else "arrow"
    return (
        f'<path d="{d}" style="fill:none;stroke:{colour};stroke-width:1.5;{dash}" '
        f'marker-end="url(#{marker})"/>'
    )


def _node(node: MapNode, x: int, y: int, cap: int) -> str:
    border = "var(--error-fg, #ba2121)" if node.warnings else "var(--border-color, #ccc)"
    fill = "var(--selected-bg, #e4e4e4)" if node.is_entry else "var(--body-bg, #fff)"
    badge = " · ENTRY" if node.is_entry else ""
    state = "" if node.enabled else " · disabled"
    if not node.delegatable and not node.is_entry:
        state += " · not delegatable"
    depth = f"max depth {node.max_depth}" + (f" (cap {cap})" if node.max_depth > cap else "")
    tools = ", ".join(node.tools) or "no tools"
    lines = [
        (f"{node.display_name}{badge}", "font-weight:bold"),
        (f"{node.name} · {depth}{state}", ""),
        (f"access: {node.access}", ""),
        (f"tools: {tools}", ""),
    ]
    if node.warnings:
        lines.append((f"⚠ {len(node.warnings)} warning(s)", "fill:var(--error-fg, #ba2121)"))
    texts = "".join(
        f'<text x="{x + 10}" y="{y + 20 + i * LINE}" style="font-size:12px;'
        f'fill:var(--body-fg, #333);{style}">{escape(_short(text))}</text>'
        for i, (text, style) in enumerate(lines)
    )
    tip = "\n".join([f"{node.display_name} ({node.name})", f"tools: {tools}", *node.warnings])
    return (
        f'<g class="map-node" data-agent="{escape(node.name)}"><title>{escape(tip)}</title>'
        f'<rect x="{x}" y="{y}" width="{WIDTH}" height="{HEIGHT}" rx="8" '
        f'style="fill:{fill};stroke:{border};stroke-width:{2 if node.is_entry else 1.2}"/>'
        f"{texts}</g>"
    )


def _marker(name: str, colour: str) -> str:
    return (
        f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        f'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'style="fill:{colour}"/></marker>'
    )


def map_svg(dmap: DelegationMap) -> SafeString:
    """The map as an inline SVG element; every text from the database is escaped."""
    positions = map_positions(dmap)
    width = max((x for x, _ in positions.values()), default=0) + WIDTH + PAD
    height = max((y for _, y in positions.values()), default=0) + HEIGHT + PAD + GAP_Y
    edges = "".join(
        _edge(positions[a], positions[b], (a, b) in dmap.cycle_edges) for a, b in dmap.edges
    )
    nodes = "".join(_node(n, *positions[n.name], dmap.cap) for n in dmap.nodes.values())
    defs = _marker("arrow", "var(--body-quiet-color, #666)") + _marker(
        "arrow-loop", "var(--error-fg, #ba2121)"
    )
    label = f"Delegation map of {len(dmap.nodes)} agents and {len(dmap.edges)} delegations"
    return mark_safe(  # noqa: S308 - built from escaped text and numbers only
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'style="font-family:var(--font-family-primary, sans-serif)"><defs>{defs}</defs>'
        f"{edges}{nodes}</svg>"
    )
