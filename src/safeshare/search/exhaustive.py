"""Exhaustive search: evaluate every node of the lattice.

The reference against which OLA and Inverse OLA are verified, and the right
tool for small lattices or for predicates that are not monotone. It walks the
lattice with :meth:`Evaluator.iter_classes`, which computes each node's
classes once, depth-first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from safeshare.core.evaluation import Classes
from safeshare.core.lattice import Lattice, Node
from safeshare.search.context import SearchContext
from safeshare.search.progress import Progress, Ticker
from safeshare.search.result import SearchResult

#: Given a node's classes: (qualifies, objective value).
NodeScore = Callable[[Classes], tuple[bool, float]]


def minimal_of(nodes: Iterable[Node], lattice: Lattice) -> list[Node]:
    """The members of ``nodes`` none of whose predecessors is a member."""
    members = set(nodes)
    return sorted(n for n in members if not any(p in members for p in lattice.predecessors(n)))


def maximal_of(nodes: Iterable[Node], lattice: Lattice) -> list[Node]:
    """The members of ``nodes`` none of whose successors is a member."""
    members = set(nodes)
    return sorted(n for n in members if not any(s in members for s in lattice.successors(n)))


class ExhaustiveSearch:
    """The ``exhaustive`` strategy: every node evaluated against the run's criterion and metric."""

    name = "exhaustive"

    def run(self, ctx: SearchContext) -> SearchResult:
        return exhaustive_search(
            ctx.lattice,
            ctx.evaluator.iter_classes(),
            lambda c: (ctx.criterion.holds(c, ctx.table), ctx.metric.value(c.node, c)),
            progress=ctx.ticker,
        )


def exhaustive_search(
    lattice: Lattice,
    all_classes: Iterable[Classes],
    score: NodeScore,
    progress: Progress | Ticker | None = None,
) -> SearchResult:
    """Evaluate every node; return the qualifying node of least objective.

    Generic over ``score`` (a node's classes -> (qualifies, objective)), so that the
    tests run it with predicates of their own. Ties are broken like OLA's: lower node
    first, then lexicographic order.
    """
    start = time.perf_counter()
    tick = (progress if isinstance(progress, Ticker) else Ticker(progress)).tick
    qualifying: list[Node] = []
    best: tuple[float, int, Node] | None = None
    checked = 0
    for classes in all_classes:
        checked += 1
        tick()
        ok, value = score(classes)
        if ok:
            qualifying.append(classes.node)
            key = (value, sum(classes.node), classes.node)
            if best is None or key < best:
                best = key
    return SearchResult(
        algorithm=ExhaustiveSearch.name,
        node=best[2] if best else None,
        objective=best[0] if best else None,
        minimal_nodes=minimal_of(qualifying, lattice),
        checked_nodes=checked,
        lattice_size=lattice.size,
        elapsed_s=time.perf_counter() - start,
        extra={"qualifying_nodes": len(qualifying)},
    )
