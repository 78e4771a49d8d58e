"""The ``node`` strategy: release one chosen node of the lattice, if it qualifies.

A custodian who has compared candidates (``safeshare ui``'s Explore screen, a trade-off curve,
another tool's advice) may want a node that is not the optimum: less suppression at a little
more loss, a coarser age for a policy reason. ARX applies any transformation of its lattice
the same way. The node is named by its levels, one per quasi-identifier::

    algorithm: node
    levels: {age: 1, sex: 0, race: 1, ...}

It is checked against the configured privacy models exactly as a searched node (the same
evaluator, the same criterion); a node that does not satisfy them is not released (the run
reports that no node qualifies, and nothing is written), and the release is re-checked by
the independent verifier like every other.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from safeshare.errors import InputError
from safeshare.search.context import SearchContext
from safeshare.search.result import SearchResult


class FixedNode:
    """The ``node`` strategy: the node of ``levels`` (quasi-identifier -> level), checked."""

    name = "node"

    def __init__(self, levels: Mapping[str, int]) -> None:
        self.levels = dict(levels)

    def node_of(self, ctx: SearchContext) -> tuple[int, ...]:
        """The node in the table's QI order; a missing, unknown or out-of-range level is an error."""
        names = list(ctx.table.qi_names)
        unknown = sorted(set(self.levels) - set(names))
        if unknown:
            raise InputError(
                f"levels: {unknown[0]!r} is not a quasi-identifier (expected {', '.join(names)})"
            )
        missing = [q for q in names if q not in self.levels]
        if missing:
            raise InputError(f"levels: missing the level of {', '.join(missing)} (one per quasi-identifier)")
        node = []
        for name, hierarchy in zip(names, ctx.table.hierarchies, strict=True):
            level = self.levels[name]
            if not 0 <= level <= hierarchy.height:
                raise InputError(f"levels.{name}: expected 0..{hierarchy.height}, got {level}")
            node.append(level)
        return tuple(node)

    def run(self, ctx: SearchContext) -> SearchResult:
        start = time.perf_counter()
        node = self.node_of(ctx)
        ctx.ticker.tick()
        qualifies = ctx.holds(node)
        return SearchResult(
            algorithm=self.name,
            node=node if qualifies else None,
            objective=ctx.metric.value(node) if qualifies else None,
            minimal_nodes=[],
            checked_nodes=1,
            lattice_size=ctx.lattice.size,
            elapsed_s=time.perf_counter() - start,
            extra={"requested_node": list(node), "qualifies": qualifies},
        )


__all__ = ["FixedNode"]
