"""The k-minimal frontier of a release and its ties at the optimum (issue 33).

OLA (thesis §4.3) finds the minimal qualifying nodes ``M`` of the lattice and releases

    n* = argmin_{n in M} loss(n)

with the tie-break :data:`~safeshare.search.ola.TIE_BREAK` (the lower node, then lexicographic
order). When several minimal nodes share the optimum's loss the choice between them is the rule's,
not the data's, and the nodes can differ in what a custodian cares about (one suppresses 1,182
Adult records where the chosen one suppresses 1,581). The report therefore lists every minimal
node with its loss and suppression, and flags the ties:

    tie(n) <=> |loss(n) - loss(n*)| <= 1e-9 max(1, |loss(n*)|)

(the tolerance absorbs a sum taken in another order; the release itself is chosen by the exact
order). A search without a minimal frontier (best-first, anytime, epsilon-safe, a fixed node) has
none: :func:`frontier_of` returns ``None``, and the report says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from safeshare.search.ola import rank_nodes
from safeshare.search.result import TIE_BREAK

if TYPE_CHECKING:
    from safeshare.workflows.anonymizer import AnonymizationResult

#: Relative tolerance of a tie (module docstring).
TIE_TOLERANCE = 1e-9

#: At most this many minimal nodes are listed (best first); the count is always given.
LISTED = 50


@dataclass(frozen=True)
class FrontierNode:
    """One minimal qualifying node: its levels, loss, suppression, and whether it is the released
    node or ties with it."""

    node: tuple[int, ...]
    levels: dict[str, int]
    loss: float
    suppressed_records: int
    chosen: bool
    tie: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": list(self.node),
            "levels": dict(self.levels),
            "loss": self.loss,
            "suppressed_records": self.suppressed_records,
            "chosen": self.chosen,
            "tie": self.tie,
        }


@dataclass(frozen=True)
class Frontier:
    """The minimal nodes best first (at most :data:`LISTED`), how many there are, the ties."""

    metric: str
    nodes: tuple[FrontierNode, ...]
    count: int
    tie_break: str = TIE_BREAK

    @property
    def ties(self) -> tuple[FrontierNode, ...]:
        """The minimal nodes other than the chosen one with the optimum's loss."""
        return tuple(n for n in self.nodes if n.tie and not n.chosen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "count": self.count,
            "listed": len(self.nodes),
            "nodes": [n.to_dict() for n in self.nodes],
            "ties": len(self.ties),
            "tie_break": self.tie_break,
        }


def is_tie(loss: float, optimum: float) -> bool:
    """Whether ``loss`` equals ``optimum`` within :data:`TIE_TOLERANCE` (relative)."""
    return math.isclose(loss, optimum, rel_tol=TIE_TOLERANCE, abs_tol=TIE_TOLERANCE)


def frontier_of(result: AnonymizationResult, listed: int = LISTED) -> Frontier | None:
    """The minimal frontier of ``result``'s search with each node's loss and suppressed records;
    ``None`` when the search computed no frontier (:meth:`AnonymizationResult.minimal_node_count`)
    or found no node. Losses are the search's own where it kept them (OLA), else the metric's."""
    if result.node is None or result.minimal_node_count() is None:
        return None
    search = result.search
    nodes = list(search.minimal_nodes)
    if not nodes:
        return None
    if len(search.minimal_losses) == len(nodes):
        losses = dict(zip(nodes, search.minimal_losses, strict=True))
    else:
        losses = {n: result.metric.value(n) for n in nodes}
    ranked = rank_nodes(nodes, losses.__getitem__)[:listed]
    chosen = tuple(result.node)
    optimum = losses.get(chosen, ranked[0][0])
    names = result.table.qi_names
    out = []
    for loss, node in ranked:
        suppressed = result.failing.get(node)
        if suppressed is None:
            suppressed = result.criterion.failing_at(result.evaluator, node)
        out.append(
            FrontierNode(
                node=tuple(int(v) for v in node),
                levels={q: int(v) for q, v in zip(names, node, strict=True)},
                loss=float(loss),
                suppressed_records=int(suppressed),
                chosen=tuple(node) == chosen,
                tie=is_tie(float(loss), float(optimum)),
            )
        )
    return Frontier(metric=result.metric.name, nodes=tuple(out), count=len(nodes))


__all__ = ["LISTED", "TIE_TOLERANCE", "Frontier", "FrontierNode", "frontier_of", "is_tie"]
