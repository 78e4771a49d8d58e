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
figures on click or Enter. The nodes take keyboard focus as one group (a roving ``tabindex``:
the optimum is the group's tab stop; the arrow keys move along a row and between rows,
``data-row`` and ``data-col`` say where each node is). Nodes that tie with the optimum's loss
carry the class ``tie``.

**Opening on the optimum.** A lattice of thousands of nodes is wider than any screen (UCI
Adult's 7,776 nodes: 10,512 px), so the ``<svg>`` is a window of :data:`WINDOW` px onto the
drawing (``viewBox``), centred on the optimum (clamped to the drawing's edges); the full size is
in ``data-full``. The page's script fits the window to its frame and zooms and pans it by
changing the ``viewBox``; without the script the optimum is in view all the same.

Everything here is rendering: the figures come from :class:`~safeshare.workflows.explore.LatticeView`.
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
#: The largest window (width, height in px) the diagram opens with, centred on the optimum.
WINDOW = (840, 600)


def window(full: tuple[float, float], focus: tuple[float, float] | None) -> tuple[float, float, float, float]:
    """The ``viewBox`` ``(x, y, width, height)`` of at most :data:`WINDOW` onto a drawing of size
    ``full``, centred on ``focus`` (the drawing's centre when ``None``) and kept inside the drawing."""
    width, height = min(full[0], WINDOW[0]), min(full[1], WINDOW[1])
    cx, cy = focus if focus is not None else (full[0] / 2, full[1] / 2)
    x = min(max(cx - width / 2, 0.0), full[0] - width)
    y = min(max(cy - height / 2, 0.0), full[1] - height)
    return x, y, width, height


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
    column: dict[tuple[int, ...], int] = {}
    for h, row in rows.items():
        y = MARGIN + (top_height - h) * ROW_GAP
        step = (width - 2 * MARGIN) / max(len(row), 1)
        for i, node in enumerate(row):
            position[node.levels] = (MARGIN + step * (i + 0.5), y)
            column[node.levels] = i
    ties = {n.levels for n in view.ties()}
    focus = position.get(view.optimum) if view.optimum is not None else None
    vx, vy, vw, vh = window((width, height), focus)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{vw:.0f}" height="{vh:.0f}" '
        f'viewBox="{vx:.1f} {vy:.1f} {vw:.1f} {vh:.1f}" data-full="{width} {height}" '
        f'class="hasse" data-testid="lattice" data-nodes="{len(view.nodes)}" role="group" '
        f'aria-label="generalization lattice: arrow keys move between nodes, Enter shows one">'
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
    # the group's one tab stop: the optimum, else the first node
    stop = view.optimum if view.optimum is not None and view.optimum in position else view.nodes[0].levels
    for node in view.nodes:
        cx, cy = position[node.levels]
        loss = "" if node.loss is None else f"{node.loss:.6g}"
        suppressed = "" if node.suppressed is None else str(node.suppressed)
        tie = node.levels in ties
        cls = f"node {node.status}" + (" searched" if node.searched else "") + (" tie" if tie else "")
        testid = ' data-testid="optimum"' if node.status == "optimum" else ""
        radius = r * 1.8 if node.status == "optimum" else r
        tied = " (ties with the optimum)" if tie and node.status != "optimum" else ""
        title = f"{node.key}: {node.status}{tied}, loss {loss or '?'}, suppressed {suppressed or '?'}"
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{radius:.1f}" class="{cls}" '
            f'data-node="{node.key}" data-status="{node.status}" data-loss="{loss}" '
            f'data-suppressed="{suppressed}" data-row="{node.height}" data-col="{column[node.levels]}" '
            f'tabindex="{0 if node.levels == stop else -1}" role="button" aria-label="{escape(title)}"'
            f"{testid}><title>{escape(title)}</title></circle>"
        )
    parts.append("</g>")
    for h in range(top_height + 1):
        y = MARGIN + (top_height - h) * ROW_GAP
        parts.append(f'<text x="4" y="{y + 4:.1f}" class="height">{h}</text>')
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["EDGES_UP_TO", "WINDOW", "hasse_svg", "window"]
