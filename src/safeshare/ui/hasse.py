"""The lattice of a run drawn as a Hasse diagram, in SVG, on the server.

Nodes are placed by **height** (the sum of their levels: the bottom node, the raw data, at the
bottom; the top node, everything generalized, at the top) and, within a height, by **loss**
(least loss on the left), so the left edge of the diagram is the cheapest way up. Colours:
the optimum, anonymous (the node qualifies), not anonymous, not checked (a lattice too large
to walk: only the nodes the search evaluated have figures). A ring marks the nodes the
search itself evaluated. Edges (one level more of one quasi-identifier) are drawn for lattices
of at most :data:`EDGES_UP_TO` nodes; beyond that they would hide the nodes.

Each node is a ``<circle data-node="2,0,1,...">`` with its loss and suppressed records as data
attributes and a ``<title>``; the page's script shows them on hover and fetches the node's
figures on click. Everything here is rendering: the figures come from
:class:`~safeshare.workflows.explore.LatticeView`.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from safeshare.api import workbench

EDGES_UP_TO = 1500
ROW_GAP = 46
MARGIN = 24


def _radius(widest: int) -> float:
    return 7.0 if widest <= 40 else 5.0 if widest <= 150 else 3.5 if widest <= 500 else 2.5


def hasse_svg(view: workbench.LatticeView) -> str:
    """The diagram as one ``<svg>`` element (``data-testid="lattice"``)."""
    rows: dict[int, list[workbench.NodeFigures]] = defaultdict(list)
    for node in view.nodes:
        rows[node.height].append(node)
    for row in rows.values():
        row.sort(key=lambda n: (n.loss if n.loss is not None else 2.0, n.suppressed or 0, n.levels))
    top_height = sum(view.heights)
    widest = max((len(row) for row in rows.values()), default=1)
    r = _radius(widest)
    spacing = max(2.6 * r, 8.0)
    width = int(max(640.0, widest * spacing + 2 * MARGIN))
    height = int(top_height * ROW_GAP + 2 * MARGIN)
    position: dict[tuple[int, ...], tuple[float, float]] = {}
    for h, row in rows.items():
        y = MARGIN + (top_height - h) * ROW_GAP
        step = (width - 2 * MARGIN) / max(len(row), 1)
        for i, node in enumerate(row):
            position[node.levels] = (MARGIN + step * (i + 0.5), y)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" class="hasse" data-testid="lattice" '
        f'data-nodes="{len(view.nodes)}" role="img" aria-label="generalization lattice">'
    ]
    if len(view.nodes) <= EDGES_UP_TO:
        parts.append('<g class="edges">')
        for levels, (x1, y1) in position.items():
            for i in range(len(levels)):
                if levels[i] < view.heights[i]:
                    up = (*levels[:i], levels[i] + 1, *levels[i + 1 :])
                    if up in position:
                        x2, y2 = position[up]
                        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>')
        parts.append("</g>")
    parts.append('<g class="nodes">')
    for node in view.nodes:
        cx, cy = position[node.levels]
        loss = "" if node.loss is None else f"{node.loss:.6g}"
        suppressed = "" if node.suppressed is None else str(node.suppressed)
        cls = f"node {node.status}" + (" searched" if node.searched else "")
        testid = ' data-testid="optimum"' if node.status == "optimum" else ""
        radius = r * 1.8 if node.status == "optimum" else r
        title = f"{node.key}: {node.status}, loss {loss or '?'}, suppressed {suppressed or '?'}"
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius:.1f}" class="{cls}" '
            f'data-node="{node.key}" data-status="{node.status}" data-loss="{loss}" '
            f'data-suppressed="{suppressed}"{testid}><title>{escape(title)}</title></circle>'
        )
    parts.append("</g>")
    for h in range(top_height + 1):
        y = MARGIN + (top_height - h) * ROW_GAP
        parts.append(f'<text x="4" y="{y + 4:.1f}" class="height">{h}</text>')
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["EDGES_UP_TO", "hasse_svg"]
